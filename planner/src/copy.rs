//! COPY … FROM STDIN and COPY … TO STDOUT, in PostgreSQL's text and CSV formats.
//!
//! COPY FROM: the wire layer feeds the client's data to a `CopyDecoder`, which cuts it into
//! records (a record may span CopyData messages, and in CSV a quoted field may span lines),
//! and hands batches of records to `Session::copy_rows`. Each batch is a record batch of
//! text columns, inserted by one `INSERT … SELECT` through the usual write path (planned once
//! per batch, its fields cast to the column types as string literals would be), so defaults,
//! NOT NULL, key and UNIQUE checks, index and view maintenance all hold; in autocommit each
//! batch commits on its own. A bad record fails the COPY with the line it is on: the batches
//! before it stay committed, its own batch is not applied, nothing after it is read. Inside a
//! transaction block everything is in the block's transaction, which the error marks failed,
//! as in PostgreSQL.
//!
//! COPY TO: the table (or query) is run as a SELECT and the wire layer writes each row in
//! the requested format.

use crate::error::{Error, Result};
use crate::session::{Output, Session};
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::sql::sqlparser::ast::{
    self, CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement,
};
use sql::ddl::{normalize_ident, table_name};
use std::sync::Arc;

/// Rows per batch (one INSERT, one commit in autocommit).
pub const BATCH_ROWS: usize = 5_000;

/// The format options of one COPY.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyFormat {
    pub csv: bool,
    /// PostgreSQL's binary format: a signature, then each row as a field count and each
    /// field as a length and its value in binary.
    pub binary: bool,
    pub delimiter: u8,
    /// The text that stands for NULL (`\N` in text, the empty unquoted field in CSV).
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

impl CopyFormat {
    fn text() -> CopyFormat {
        CopyFormat {
            csv: false,
            binary: false,
            delimiter: b'\t',
            null: "\\N".into(),
            header: false,
            quote: b'"',
            escape: b'"',
        }
    }

    fn csv() -> CopyFormat {
        CopyFormat {
            csv: true,
            delimiter: b',',
            null: String::new(),
            ..CopyFormat::text()
        }
    }
}

/// A COPY FROM STDIN waiting for its data.
#[derive(Debug, Clone)]
pub struct CopyIn {
    pub table: String,
    /// The columns each record holds, in order.
    pub columns: Vec<String>,
    /// The columns' type OIDs, which binary fields are read by.
    pub types: Vec<u32>,
    pub format: CopyFormat,
}

impl CopyIn {
    /// An error of the data's decoding, its line named as PostgreSQL names it
    /// (`COPY t, line 3`).
    pub fn locate(&self, e: Error) -> Error {
        match e {
            Error::Context { context, source } if context.starts_with("line ") => Error::Context {
                context: format!("COPY {}, {context}", self.table),
                source,
            },
            e => e,
        }
    }
}

fn single_byte(c: char, what: &str) -> Result<u8> {
    u8::try_from(c as u32)
        .ok()
        .filter(|b| b.is_ascii())
        .ok_or_else(|| {
            Error::Unsupported(format!("COPY {what} must be a single one-byte character"))
        })
}

/// The format a COPY statement's options ask for.
fn format_of(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<CopyFormat> {
    let csv = options
        .iter()
        .any(|o| matches!(o, CopyOption::Format(f) if f.value.eq_ignore_ascii_case("csv")))
        || legacy.iter().any(|o| matches!(o, CopyLegacyOption::Csv(_)));
    let mut format = if csv {
        CopyFormat::csv()
    } else {
        CopyFormat::text()
    };
    for o in options {
        match o {
            CopyOption::Format(f) => match f.value.to_ascii_lowercase().as_str() {
                "csv" | "text" => {}
                "binary" => format.binary = true,
                other => {
                    return Err(Error::InvalidParameterValue(format!(
                        "COPY format \"{other}\" not recognized"
                    )));
                }
            },
            CopyOption::Delimiter(c) => format.delimiter = single_byte(*c, "delimiter")?,
            CopyOption::Null(n) => format.null = n.clone(),
            CopyOption::Header(h) => format.header = *h,
            CopyOption::Quote(c) => format.quote = single_byte(*c, "quote")?,
            CopyOption::Escape(c) => format.escape = single_byte(*c, "escape")?,
            CopyOption::Encoding(e)
                if e.eq_ignore_ascii_case("utf8") || e.eq_ignore_ascii_case("utf-8") => {}
            other => return Err(Error::Unsupported(format!("COPY option {other}"))),
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Csv(csv_options) => {
                for c in csv_options {
                    match c {
                        CopyLegacyCsvOption::Header => format.header = true,
                        CopyLegacyCsvOption::Quote(q) => format.quote = single_byte(*q, "quote")?,
                        CopyLegacyCsvOption::Escape(e) => {
                            format.escape = single_byte(*e, "escape")?
                        }
                        other => return Err(Error::Unsupported(format!("COPY option {other}"))),
                    }
                }
            }
            CopyLegacyOption::Delimiter(c) => format.delimiter = single_byte(*c, "delimiter")?,
            CopyLegacyOption::Null(n) => format.null = n.clone(),
            CopyLegacyOption::Header => format.header = true,
            CopyLegacyOption::Binary => format.binary = true,
            other => return Err(Error::Unsupported(format!("COPY option {other}"))),
        }
    }
    // ESCAPE defaults to QUOTE, whichever QUOTE is.
    let escape_given = options.iter().any(|o| matches!(o, CopyOption::Escape(_)))
        || legacy.iter().any(|o| {
            matches!(o, CopyLegacyOption::Csv(c) if c.iter().any(|c| matches!(c, CopyLegacyCsvOption::Escape(_))))
        });
    if !escape_given {
        format.escape = format.quote;
    }
    if format.binary {
        let text_only = options.iter().find_map(|o| match o {
            CopyOption::Delimiter(_) => Some("DELIMITER"),
            CopyOption::Null(_) => Some("NULL"),
            CopyOption::Header(_) => Some("HEADER"),
            CopyOption::Quote(_) => Some("QUOTE"),
            CopyOption::Escape(_) => Some("ESCAPE"),
            _ => None,
        });
        if let Some(option) = text_only.or(csv.then_some("CSV")) {
            return Err(Error::InvalidStatement(format!(
                "cannot specify {option} in BINARY mode"
            )));
        }
    }
    if format.header && !format.csv {
        return Err(Error::Unsupported("COPY HEADER in text format".into()));
    }
    Ok(format)
}

/// What the wire layer does for a COPY statement.
pub(crate) async fn copy(session: &mut Session, stmt: &Statement) -> Result<Output> {
    let Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        values,
    } = stmt
    else {
        return Err(Error::Internal("not a COPY".into()));
    };
    let parquet = options
        .iter()
        .any(|o| matches!(o, CopyOption::Format(f) if f.value.eq_ignore_ascii_case("parquet")))
        || legacy_options
            .iter()
            .any(|o| matches!(o, CopyLegacyOption::Parquet));
    if parquet {
        if options.len() + legacy_options.len() > 1 {
            return Err(Error::Unsupported(
                "COPY options besides FORMAT parquet".into(),
            ));
        }
        let CopyTarget::File { filename } = target else {
            return Err(Error::Unsupported(
                "COPY … STDIN or STDOUT in Parquet format (give a path or URL)".into(),
            ));
        };
        return if *to {
            parquet_out(session, source, filename).await
        } else {
            parquet_in(session, source, filename).await
        };
    }
    let format = format_of(options, legacy_options)?;
    match (to, target) {
        (false, CopyTarget::Stdin) => {
            if !values.is_empty() {
                return Err(Error::Unsupported(
                    "COPY data inline in the query text".into(),
                ));
            }
            let (def, columns) = copy_target(session, source)?;
            let types = columns
                .iter()
                .map(|c| {
                    let (_, column) = def.column(c)?;
                    Ok(crate::pg_catalog::field_type_oid(&column.ty.field(c, true)) as u32)
                })
                .collect::<Result<_>>()?;
            Ok(Output::CopyIn(CopyIn {
                table: def.name.clone(),
                columns,
                types,
                format,
            }))
        }
        (true, CopyTarget::Stdout) => {
            let query = copy_query(session, source)?;
            match session.execute(query, &[]).await? {
                Output::Rows { schema, stream, .. } => Ok(Output::CopyOut {
                    schema,
                    stream,
                    format,
                }),
                _ => Err(Error::Syntax(
                    "COPY (query) needs a query that returns rows".into(),
                )),
            }
        }
        (_, CopyTarget::File { .. } | CopyTarget::Program { .. }) => Err(Error::Unsupported(
            "COPY to or from a server file or program in text or CSV (use psql's \\copy, or \
             FORMAT parquet)"
                .into(),
        )),
        _ => Err(Error::Syntax(
            "COPY FROM reads STDIN and COPY TO writes STDOUT".into(),
        )),
    }
}

/// The table COPY FROM writes to and the columns its data holds (all visible columns but
/// generated ones, or the listed ones, each once).
fn copy_target(
    session: &Session,
    source: &CopySource,
) -> Result<(std::sync::Arc<sql::TableDef>, Vec<String>)> {
    let CopySource::Table {
        table_name: name,
        columns,
    } = source
    else {
        return Err(Error::Syntax("COPY FROM needs a table".into()));
    };
    let name = table_name(name)?;
    let def = session.written_table_def(&name).map_err(|e| match e {
        Error::WrongObjectType(_) => {
            Error::WrongObjectType(format!("cannot copy to sequence \"{name}\""))
        }
        e => e,
    })?;
    if def.view.is_some() {
        return Err(Error::WrongObjectType(format!(
            "cannot copy to materialized view \"{}\"",
            def.name
        )));
    }
    let names = copied_columns(&def, columns)?;
    Ok((def, names))
}

/// The columns COPY reads or writes of table `def`: the listed ones, each once, or all
/// visible ones but generated ones, as in PostgreSQL, which refuses a generated one listed.
fn copied_columns(def: &sql::TableDef, columns: &[ast::Ident]) -> Result<Vec<String>> {
    if columns.is_empty() {
        return Ok(def
            .columns
            .iter()
            .filter(|c| !c.hidden && c.generated.is_none())
            .map(|c| c.name.clone())
            .collect());
    }
    let mut names: Vec<String> = Vec::new();
    for c in columns {
        let name = normalize_ident(c);
        let (_, col) = def.column(&name)?;
        if col.hidden {
            return Err(Error::Sql(sql::Error::UnknownColumn {
                table: def.name.clone(),
                column: name,
            }));
        }
        if col.generated.is_some() {
            return Err(Error::InvalidColumnReference(format!(
                "column \"{name}\" is a generated column"
            )));
        }
        if names.contains(&name) {
            return Err(Error::Sql(sql::Error::DuplicateColumn(name)));
        }
        names.push(name);
    }
    Ok(names)
}

/// The query COPY TO runs: the table's columns (all visible, or the listed ones), or the
/// query given.
fn copy_query(session: &Session, source: &CopySource) -> Result<Statement> {
    Ok(match source {
        CopySource::Table {
            table_name: name,
            columns,
        } => {
            let name = table_name(name)?;
            let def = session.table_def(&name)?;
            let list = copied_columns(&def, columns)?
                .iter()
                .map(|c| quote_ident(c))
                .collect::<Vec<_>>()
                .join(", ");
            crate::session::parse_sql(&format!("SELECT {list} FROM \"{name}\""))?.remove(0)
        }
        CopySource::Query(q) => Statement::Query(q.clone()),
    })
}

/// COPY … TO 'path-or-url' (FORMAT parquet): one Parquet file, written through the object
/// store the location names (`crate::objects`).
async fn parquet_out(session: &mut Session, source: &CopySource, location: &str) -> Result<Output> {
    let url = crate::objects::resolve(&session.ctx, location)?;
    let query = copy_query(session, source)?;
    let plan = session.plan(query).await?;
    let df = session.ctx.execute_logical_plan(plan).await?;
    let options = datafusion::dataframe::DataFrameWriteOptions::new().with_single_file_output(true);
    let written = df.write_parquet(&url, options, None).await?;
    let count: u64 = written
        .iter()
        .filter_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::UInt64Array>()
                .map(|a| a.iter().flatten().sum::<u64>())
        })
        .sum();
    Ok(Output::Command(format!("COPY {count}")))
}

/// COPY t [(cols)] FROM 'path-or-url' (FORMAT parquet): the file's columns of the same
/// names, inserted in batches as INSERT … SELECT through the usual write path (casts to the
/// column types, checks, indexes and views), each batch committed on its own in autocommit.
async fn parquet_in(session: &mut Session, source: &CopySource, location: &str) -> Result<Output> {
    use datafusion::prelude::ParquetReadOptions;
    let (def, names) = copy_target(session, source)?;
    let url = crate::objects::resolve(&session.ctx, location)?;
    let df = session
        .ctx
        .read_parquet(url.clone(), ParquetReadOptions::default())
        .await
        .map_err(|e| {
            if e.to_string().contains("No files found") {
                Error::NoSuchFile(location.to_string())
            } else {
                Error::DataFusion(e)
            }
        })?;
    for n in &names {
        if df.schema().field_with_unqualified_name(n).is_err() {
            return Err(Error::Sql(sql::Error::UnknownColumn {
                table: location.to_string(),
                column: n.clone(),
            }));
        }
    }
    Ok(Output::CopyFromParquet(ParquetLoad {
        table: def.name.clone(),
        columns: names,
        location: location.to_string(),
        url,
    }))
}

/// A COPY FROM Parquet whose file was found and checked, to run with
/// `Session::load_parquet` (outside the COPY statement's own execution, so each batch's
/// INSERT is not nested inside it).
#[derive(Debug, Clone)]
pub struct ParquetLoad {
    table: String,
    columns: Vec<String>,
    location: String,
    url: String,
}

impl Session {
    /// Reads the Parquet file of `load` and inserts its rows in batches of `BATCH_ROWS`.
    pub async fn load_parquet(&mut self, load: ParquetLoad) -> Result<Output> {
        use datafusion::prelude::ParquetReadOptions;
        let df = self
            .ctx
            .read_parquet(load.url.clone(), ParquetReadOptions::default())
            .await?;
        let columns: Vec<&str> = load.columns.iter().map(String::as_str).collect();
        let mut stream = self
            .db
            .executor
            .stream(df.select_columns(&columns)?, &self.interrupt)
            .await?;
        let mut count = 0usize;
        let mut pending: Vec<RecordBatch> = Vec::new();
        let mut pending_rows = 0usize;
        loop {
            let next = futures::StreamExt::next(&mut stream).await.transpose()?;
            if let Some(batch) = &next {
                pending_rows += batch.num_rows();
                pending.push(batch.clone());
            }
            if pending_rows >= BATCH_ROWS || (next.is_none() && pending_rows > 0) {
                let batches = std::mem::take(&mut pending);
                let rows = std::mem::take(&mut pending_rows);
                if let Err(e) = self
                    .insert_batches(&load.table, &load.columns, batches)
                    .await
                {
                    return Err(Error::Context {
                        context: format!(
                            "COPY {}, rows {} to {} of {}",
                            load.table,
                            count + 1,
                            count + rows,
                            load.location
                        ),
                        source: Box::new(e),
                    });
                }
                count += rows;
            }
            if next.is_none() {
                break;
            }
        }
        Ok(Output::Command(format!("COPY {count}")))
    }
}

/// The table a batch of COPY rows is read from while it is inserted.
const COPY_SOURCE: &str = "__partita_copy_source";

impl Session {
    /// Inserts `batches`, whose columns are `columns` of `table` by name, as one
    /// `INSERT … SELECT` through the usual write path: casts to the column types, NOT NULL,
    /// keys, indexes and views. In autocommit it is a transaction of its own.
    async fn insert_batches(
        &mut self,
        table: &str,
        columns: &[String],
        batches: Vec<RecordBatch>,
    ) -> Result<()> {
        let list = columns
            .iter()
            .map(|c| quote_ident(c))
            .collect::<Vec<_>>()
            .join(", ");
        // COPY takes an identity column's values as given, GENERATED ALWAYS too.
        let insert = format!(
            "INSERT INTO {} ({list}) OVERRIDING SYSTEM VALUE SELECT {list} FROM pg_temp.{COPY_SOURCE}",
            quote_ident(table)
        );
        let schema = batches[0].schema();
        let source = datafusion::datasource::MemTable::try_new(schema, vec![batches])?;
        let reference = datafusion::common::TableReference::partial("pg_temp", COPY_SOURCE);
        self.ctx
            .register_table(reference.clone(), std::sync::Arc::new(source))?;
        // Outside a transaction each batch commits on its own, in an implicit block too.
        let block = std::mem::replace(&mut self.implicit_block, false);
        let result = match crate::session::parse_sql(&insert) {
            Ok(mut stmts) => self.execute(stmts.remove(0), &[]).await.map(|_| ()),
            Err(e) => Err(e),
        };
        self.implicit_block = block;
        self.ctx.deregister_table(reference)?;
        result
    }
}

/// `name` as a quoted SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Session {
    /// Inserts one batch of COPY records (`first_line` is the line of the first), as one
    /// INSERT in the session's transaction or, in autocommit, a transaction of its own. An
    /// error names the line it is on.
    pub async fn copy_rows(
        &mut self,
        target: &CopyIn,
        rows: Vec<(usize, Vec<Option<String>>)>,
    ) -> Result<usize> {
        if rows.is_empty() {
            return Ok(0);
        }
        let context = |line: usize| format!("COPY {}, line {line}", target.table);
        for (line, fields) in &rows {
            if fields.len() != target.columns.len() {
                let message = if fields.len() < target.columns.len() {
                    format!(
                        "missing data for column \"{}\"",
                        target.columns[fields.len()]
                    )
                } else {
                    "extra data after last expected column".to_string()
                };
                return Err(Error::Context {
                    context: context(*line),
                    source: Box::new(Error::BadCopyData(message)),
                });
            }
        }
        // The fields as text columns, cast to the column types by the INSERT as string
        // literals would be.
        let arrays: Vec<ArrayRef> = (0..target.columns.len())
            .map(|c| {
                Arc::new(
                    rows.iter()
                        .map(|(_, fields)| fields[c].as_deref())
                        .collect::<StringArray>(),
                ) as ArrayRef
            })
            .collect();
        let schema = Arc::new(Schema::new(
            target
                .columns
                .iter()
                .map(|c| Field::new(c, DataType::Utf8, true))
                .collect::<Vec<_>>(),
        ));
        let batch =
            RecordBatch::try_new(schema, arrays).map_err(|e| Error::DataFusion(e.into()))?;
        let count = rows.len();
        match self
            .insert_batches(&target.table, &target.columns, vec![batch])
            .await
        {
            Ok(()) => Ok(count),
            // Checked once the batch's rows are in (PostgreSQL: once all are): no line.
            Err(e @ Error::ForeignKeyViolation { .. }) => Err(e),
            Err(e) => {
                let failing = self.failing_value(target, &rows).await;
                // A constraint's violation is about a row, not a value that did not convert.
                let constraint = matches!(
                    e,
                    Error::UniqueViolation { .. }
                        | Error::NotNull { .. }
                        | Error::CheckViolation { .. }
                );
                let context = match failing {
                    Some((line, Some((column, text)))) if !constraint => {
                        format!("{}, column {column}: \"{text}\"", context(line))
                    }
                    Some((line, _)) => context(line),
                    None => return Err(e),
                };
                Err(Error::Context {
                    context,
                    source: Box::new(e),
                })
            }
        }
    }

    /// The first line of a failed batch with a value that does not convert to its column's
    /// type, with that column and value, found by converting them one at a time; else the
    /// batch's first line.
    async fn failing_value<'r>(
        &mut self,
        target: &'r CopyIn,
        rows: &'r [(usize, Vec<Option<String>>)],
    ) -> Option<(usize, Option<(&'r str, &'r str)>)> {
        let def = self.table_def(&target.table).ok()?;
        let types: Vec<sql::SqlType> = target
            .columns
            .iter()
            .map(|c| def.column(c).map(|(_, col)| col.ty))
            .collect::<std::result::Result<_, _>>()
            .ok()?;
        for (line, fields) in rows {
            for ((field, ty), column) in fields.iter().zip(&types).zip(&target.columns) {
                let Some(text) = field else { continue };
                if !converts(text, *ty) {
                    return Some((*line, Some((column.as_str(), text.as_str()))));
                }
            }
        }
        rows.first().map(|(line, _)| (*line, None))
    }
}

/// Whether `text` is a valid value of type `ty`, as a string literal would be read.
fn converts(text: &str, ty: sql::SqlType) -> bool {
    use datafusion::common::ScalarValue;
    let Ok(array) = ScalarValue::Utf8(Some(text.to_string())).to_array() else {
        return false;
    };
    let string_like = matches!(
        ty,
        sql::SqlType::Text
            | sql::SqlType::Varchar { .. }
            | sql::SqlType::Char { .. }
            | sql::SqlType::Bytea
            | sql::SqlType::Uuid
    );
    let array = if string_like {
        array
    } else if matches!(ty, sql::SqlType::Numeric { .. }) {
        let text = datafusion::logical_expr::ColumnarValue::Array(array);
        match crate::numeric::numeric_from_text(&text, 1, &ty.arrow()) {
            Ok(values) => match values.to_array(1) {
                Ok(a) => a,
                Err(_) => return false,
            },
            Err(_) => return false,
        }
    } else {
        match datafusion::arrow::compute::cast_with_options(
            &array,
            &ty.arrow(),
            &datafusion::arrow::compute::CastOptions {
                safe: false,
                ..Default::default()
            },
        ) {
            Ok(a) => a,
            Err(_) => return false,
        }
    };
    crate::convert::value_from_array(&array, 0, ty, "").is_ok()
}

/// Cuts COPY FROM data into records, across the boundaries of the messages it comes in.
pub struct CopyDecoder {
    format: CopyFormat,
    /// The columns' type OIDs (binary format).
    types: Vec<u32>,
    pending: Vec<u8>,
    /// Line number of the next record.
    line: usize,
    /// The header line is still to be skipped.
    header: bool,
    /// The end-of-data marker `\.` was seen.
    ended: bool,
}

impl CopyDecoder {
    pub fn new(format: CopyFormat, types: Vec<u32>) -> CopyDecoder {
        CopyDecoder {
            header: format.header || format.binary,
            format,
            types,
            pending: Vec::new(),
            line: 1,
            ended: false,
        }
    }

    /// Adds data and returns the records it completes, each with its line number.
    pub fn push(&mut self, data: &[u8]) -> Result<Vec<(usize, Vec<Option<String>>)>> {
        if self.format.binary && self.ended && !data.is_empty() {
            return Err(self.binary_error("received copy data after EOF marker"));
        }
        self.pending.extend_from_slice(data);
        if self.format.binary {
            return self.binary_records();
        }
        let mut out = Vec::new();
        let mut start = 0;
        while !self.ended {
            let Some(end) = self.record_end(start) else {
                break;
            };
            let raw = &self.pending[start..end];
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw).to_vec();
            start = end + 1;
            self.take(&raw, &mut out)?;
        }
        self.pending.drain(..start);
        Ok(out)
    }

    /// The records left at the end of data (a last line without a newline).
    pub fn finish(&mut self) -> Result<Vec<(usize, Vec<Option<String>>)>> {
        if self.format.binary {
            if self.header {
                return Err(self.binary_error("COPY file signature not recognized"));
            }
            // PostgreSQL takes binary data without its trailer; not a partial row.
            if !self.ended && !self.pending.is_empty() {
                return Err(self.binary_error("unexpected EOF in COPY data"));
            }
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        if !self.ended && !self.pending.is_empty() {
            let raw = std::mem::take(&mut self.pending);
            if self.format.csv && self.open_quote(&raw) {
                return Err(Error::Context {
                    context: format!("line {}", self.line),
                    source: Box::new(Error::BadCopyData("unterminated CSV quoted field".into())),
                });
            }
            self.take(&raw, &mut out)?;
        }
        Ok(out)
    }

    /// The binary rows complete in the data so far (after the signature and header
    /// extension, which come first); the trailer (a field count of -1) ends the data.
    fn binary_records(&mut self) -> Result<Vec<(usize, Vec<Option<String>>)>> {
        const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";
        let mut out = Vec::new();
        let mut at = 0;
        let data = std::mem::take(&mut self.pending);
        let int = |at: usize| -> Option<i32> {
            Some(i32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
        };
        if self.header {
            let seen = data.len().min(SIGNATURE.len());
            if data[..seen] != SIGNATURE[..seen] {
                return Err(self.binary_error("COPY file signature not recognized"));
            }
            if data.len() < SIGNATURE.len() + 8 {
                self.pending = data;
                return Ok(out);
            }
            let flags = int(SIGNATURE.len()).unwrap_or(0);
            if flags & 0x0001_0000 != 0 {
                return Err(self.binary_error("COPY file with OIDs is not supported"));
            }
            if flags >> 17 != 0 {
                return Err(self.binary_error("unrecognized critical flags in COPY file header"));
            }
            let extension = int(SIGNATURE.len() + 4).unwrap_or(0).max(0) as usize;
            let start = SIGNATURE.len() + 8 + extension;
            if data.len() < start {
                self.pending = data;
                return Ok(out);
            }
            self.header = false;
            at = start;
        }
        while !self.ended {
            let Some(count) = data
                .get(at..at + 2)
                .map(|b| i16::from_be_bytes([b[0], b[1]]))
            else {
                break;
            };
            if count == -1 {
                self.ended = true;
                at += 2;
                break;
            }
            if count as usize != self.types.len() {
                return Err(self.binary_error(&format!(
                    "row field count is {count}, expected {}",
                    self.types.len()
                )));
            }
            // The row's fields, if all of them have arrived.
            let mut end = at + 2;
            let mut spans = Vec::with_capacity(self.types.len());
            let complete = loop {
                if spans.len() == self.types.len() {
                    break true;
                }
                let Some(len) = int(end) else { break false };
                end += 4;
                if len == -1 {
                    spans.push(None);
                    continue;
                }
                if len < 0 {
                    return Err(self.binary_error("invalid field size"));
                }
                let len = len as usize;
                if data.len() < end + len {
                    break false;
                }
                spans.push(Some(end..end + len));
                end += len;
            };
            if !complete {
                break;
            }
            let mut fields = Vec::with_capacity(spans.len());
            for (span, &ty) in spans.into_iter().zip(&self.types) {
                let Some(span) = span else {
                    fields.push(None);
                    continue;
                };
                let text = crate::binary::text(&data[span], ty).map_err(|what| {
                    self.binary_error(&format!("incorrect binary data format ({what})"))
                })?;
                if text.contains('\0') {
                    return Err(Error::Context {
                        context: format!("line {}", self.line),
                        source: Box::new(Error::InvalidEncoding("0x00".into())),
                    });
                }
                fields.push(Some(text));
            }
            out.push((self.line, fields));
            self.line += 1;
            at = end;
        }
        self.pending = data[at..].to_vec();
        if self.ended && !self.pending.is_empty() {
            return Err(self.binary_error("received copy data after EOF marker"));
        }
        Ok(out)
    }

    /// A binary format error at the current row (22P04, bad COPY file format).
    fn binary_error(&self, message: &str) -> Error {
        Error::Context {
            context: format!("line {}", self.line),
            source: Box::new(Error::BadCopyData(message.into())),
        }
    }

    fn take(&mut self, raw: &[u8], out: &mut Vec<(usize, Vec<Option<String>>)>) -> Result<()> {
        let line = self.line;
        self.line += 1 + raw.iter().filter(|&&b| b == b'\n').count();
        if raw == b"\\." {
            self.ended = true;
            return Ok(());
        }
        if self.header {
            self.header = false;
            return Ok(());
        }
        let fields = if self.format.csv {
            self.csv_fields(raw)
        } else {
            self.text_fields(raw)
        }
        .map_err(|e| Error::Context {
            context: format!("line {line}"),
            source: Box::new(e),
        })?;
        out.push((line, fields));
        Ok(())
    }

    /// The index of the newline that ends the record starting at `start`, if it has arrived.
    fn record_end(&self, start: usize) -> Option<usize> {
        let data = &self.pending[start..];
        if !self.format.csv {
            return data.iter().position(|&b| b == b'\n').map(|i| start + i);
        }
        let mut quoted = false;
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            if quoted {
                if b == self.format.escape
                    && self.format.escape != self.format.quote
                    && i + 1 < data.len()
                {
                    i += 2;
                    continue;
                }
                if b == self.format.quote {
                    quoted = false;
                }
            } else if b == self.format.quote {
                quoted = true;
            } else if b == b'\n' {
                return Some(start + i);
            }
            i += 1;
        }
        None
    }

    fn open_quote(&self, raw: &[u8]) -> bool {
        let quotes = raw.iter().filter(|&&b| b == self.format.quote).count();
        quotes % 2 == 1
    }

    fn text_fields(&self, raw: &[u8]) -> Result<Vec<Option<String>>> {
        let mut fields = Vec::new();
        // Fields end at each delimiter a backslash does not escape (`a\,b` is one field).
        let mut parts = Vec::new();
        let mut from = 0;
        let mut i = 0;
        while i < raw.len() {
            match raw[i] {
                b'\\' => i += 2,
                b if b == self.format.delimiter => {
                    parts.push(&raw[from..i]);
                    i += 1;
                    from = i;
                }
                _ => i += 1,
            }
        }
        parts.push(&raw[from.min(raw.len())..]);
        for part in parts {
            if part == self.format.null.as_bytes() {
                fields.push(None);
                continue;
            }
            let mut out = Vec::with_capacity(part.len());
            let mut i = 0;
            while i < part.len() {
                let b = part[i];
                if b != b'\\' || i + 1 == part.len() {
                    out.push(b);
                    i += 1;
                    continue;
                }
                let next = part[i + 1];
                i += 2;
                match next {
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'v' => out.push(11),
                    b'0'..=b'7' => {
                        let mut value = u32::from(next - b'0');
                        let mut digits = 1;
                        while digits < 3 && i < part.len() && (b'0'..=b'7').contains(&part[i]) {
                            value = value * 8 + u32::from(part[i] - b'0');
                            i += 1;
                            digits += 1;
                        }
                        out.push(value as u8);
                    }
                    b'x' if i < part.len() && part[i].is_ascii_hexdigit() => {
                        let mut value = 0u32;
                        let mut digits = 0;
                        while digits < 2 && i < part.len() && part[i].is_ascii_hexdigit() {
                            value = value * 16 + (part[i] as char).to_digit(16).unwrap_or(0);
                            i += 1;
                            digits += 1;
                        }
                        out.push(value as u8);
                    }
                    other => out.push(other),
                }
            }
            fields.push(Some(utf8(out)?));
        }
        Ok(fields)
    }

    fn csv_fields(&self, raw: &[u8]) -> Result<Vec<Option<String>>> {
        let (delimiter, quote, escape) =
            (self.format.delimiter, self.format.quote, self.format.escape);
        let mut fields = Vec::new();
        let mut i = 0;
        loop {
            let mut value = Vec::new();
            let mut was_quoted = false;
            // A field: unquoted text and quoted sections, up to the next delimiter.
            while i < raw.len() && raw[i] != delimiter {
                if raw[i] == quote {
                    was_quoted = true;
                    i += 1;
                    loop {
                        if i >= raw.len() {
                            return Err(Error::BadCopyData("unterminated CSV quoted field".into()));
                        }
                        let b = raw[i];
                        if b == escape
                            && i + 1 < raw.len()
                            && (raw[i + 1] == quote || raw[i + 1] == escape)
                            && (escape != quote || raw[i + 1] == quote)
                        {
                            value.push(raw[i + 1]);
                            i += 2;
                        } else if b == quote {
                            i += 1;
                            break;
                        } else {
                            value.push(b);
                            i += 1;
                        }
                    }
                } else {
                    value.push(raw[i]);
                    i += 1;
                }
            }
            let field = if !was_quoted && value == self.format.null.as_bytes() {
                None
            } else {
                Some(utf8(value)?)
            };
            fields.push(field);
            if i >= raw.len() {
                break;
            }
            i += 1; // the delimiter
        }
        Ok(fields)
    }
}

/// A field's text: UTF-8 without NUL, as PostgreSQL's text values are (22021).
fn utf8(bytes: Vec<u8>) -> Result<String> {
    if bytes.contains(&0) {
        return Err(Error::InvalidEncoding("0x00".into()));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bad = &e.as_bytes()[at..];
        let shown: Vec<String> = bad.iter().take(2).map(|b| format!("0x{b:02x}")).collect();
        Error::InvalidEncoding(shown.join(" "))
    })
}

/// Writes one value of a COPY TO row: `text` is the value's PostgreSQL text form, `None` is
/// NULL.
pub fn encode_field(format: &CopyFormat, text: Option<&str>, out: &mut Vec<u8>) {
    let Some(text) = text else {
        out.extend_from_slice(format.null.as_bytes());
        return;
    };
    if format.csv {
        let needs_quotes = text.is_empty()
            || text == format.null
            || text
                .bytes()
                .any(|b| b == format.delimiter || b == format.quote || b == b'\n' || b == b'\r');
        if !needs_quotes {
            out.extend_from_slice(text.as_bytes());
            return;
        }
        out.push(format.quote);
        for b in text.bytes() {
            if b == format.quote || b == format.escape {
                out.push(format.escape);
            }
            out.push(b);
        }
        out.push(format.quote);
        return;
    }
    for b in text.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ if b == format.delimiter => {
                out.push(b'\\');
                out.push(b);
            }
            _ => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(format: CopyFormat, chunks: &[&str]) -> Vec<(usize, Vec<Option<String>>)> {
        let mut d = CopyDecoder::new(format, vec![]);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.push(c.as_bytes()).unwrap());
        }
        out.extend(d.finish().unwrap());
        out
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn text_records_across_chunks_with_escapes_and_nulls() {
        let rows = decode(
            CopyFormat::text(),
            &["1\ta\\tb\n2\t\\", "N\n3\tx\\\\y\\101", "\n\\.\nignored\n"],
        );
        assert_eq!(
            rows,
            vec![
                (1, vec![s("1"), s("a\tb")]),
                (2, vec![s("2"), None]),
                (3, vec![s("3"), s("x\\yA")]),
            ]
        );
    }

    #[test]
    fn csv_quotes_header_and_multiline_fields() {
        let mut format = CopyFormat::csv();
        format.header = true;
        let rows = decode(
            format,
            &[
                "a,b\n1,\"x,\"\"y\"\"\"\n2,\n3,\"\"\n4,\"two\nli",
                "nes\"\r\n5,z",
            ],
        );
        assert_eq!(
            rows,
            vec![
                (2, vec![s("1"), s("x,\"y\"")]),
                (3, vec![s("2"), None]),
                (4, vec![s("3"), s("")]),
                (5, vec![s("4"), s("two\nlines")]),
                (7, vec![s("5"), s("z")]),
            ]
        );
    }

    #[test]
    fn binary_rows_across_chunks_with_nulls_and_trailer() {
        let mut data = b"PGCOPY\n\xff\r\n\0".to_vec();
        data.extend_from_slice(&0i32.to_be_bytes());
        data.extend_from_slice(&4i32.to_be_bytes());
        data.extend_from_slice(b"skip");
        for (id, name) in [(7i32, Some("Ann")), (-8, None)] {
            data.extend_from_slice(&2i16.to_be_bytes());
            data.extend_from_slice(&4i32.to_be_bytes());
            data.extend_from_slice(&id.to_be_bytes());
            match name {
                Some(name) => {
                    data.extend_from_slice(&(name.len() as i32).to_be_bytes());
                    data.extend_from_slice(name.as_bytes());
                }
                None => data.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        data.extend_from_slice(&(-1i16).to_be_bytes());
        let format = CopyFormat {
            binary: true,
            ..CopyFormat::text()
        };
        let types = vec![crate::binary::oid::INT4, crate::binary::oid::TEXT];
        // Every split of the data into two messages gives the same rows.
        for cut in 0..data.len() {
            let mut d = CopyDecoder::new(format.clone(), types.clone());
            let mut rows = d.push(&data[..cut]).unwrap();
            rows.extend(d.push(&data[cut..]).unwrap());
            rows.extend(d.finish().unwrap());
            assert_eq!(
                rows,
                vec![(1, vec![s("7"), s("Ann")]), (2, vec![s("-8"), None])]
            );
        }
        let mut d = CopyDecoder::new(format.clone(), types.clone());
        assert!(d.push(b"PGCOPY\nnot binary data").is_err());
        // Data ending inside a row is an error, not a shorter table.
        let mut d = CopyDecoder::new(format, types);
        d.push(&data[..data.len() - 5]).unwrap();
        assert!(d.finish().is_err());
    }

    #[test]
    fn fields_round_trip_through_encode() {
        for format in [CopyFormat::text(), CopyFormat::csv()] {
            let values = [
                s("plain"),
                s(""),
                None,
                s("tab\there"),
                s("a,\"b\"\nc"),
                s("back\\slash"),
            ];
            let mut line = Vec::new();
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    line.push(format.delimiter);
                }
                encode_field(&format, v.as_deref(), &mut line);
            }
            line.push(b'\n');
            let rows = decode(format.clone(), &[std::str::from_utf8(&line).unwrap()]);
            assert_eq!(rows, vec![(1, values.to_vec())], "{format:?}");
        }
    }
}
