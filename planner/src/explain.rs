//! EXPLAIN [ANALYZE] in PostgreSQL's shape: one `QUERY PLAN` text column, a tree of nodes
//! with `->` arrows, and for every table access its class, key conditions, residual filter
//! and the range partitions it touches (see `provider::KeyScanExec::explain_lines`).

use crate::error::{Error, Result};
use crate::provider::{IndexLookupExec, KeyScanExec};
use crate::session::{Output, Session, mentions_system_column};
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::physical_plan::{ExecutionPlan, displayable};
use datafusion::sql::sqlparser::ast::{
    self, FromTable, SelectItem, SetExpr, Statement, TableWithJoins, WildcardAdditionalOptions,
};
use std::sync::Arc;
use std::time::Instant;

/// Nodes DataFusion adds for its own execution; PostgreSQL's plans have no counterpart.
const HIDDEN: &[&str] = &[
    "ProjectionExec",
    "CoalesceBatchesExec",
    "CooperativeExec",
    "RepartitionExec",
    "CoalescePartitionsExec",
];

impl Session {
    pub(crate) async fn explain(&mut self, stmt: Statement) -> Result<Output> {
        let Statement::Explain {
            analyze,
            statement,
            options,
            ..
        } = stmt
        else {
            return Err(Error::Internal("explain() of a non-EXPLAIN".into()));
        };
        let mut opts = ExplainOptions {
            analyze,
            timing: true,
            summary: analyze,
        };
        let mut summary_set = false;
        for option in options.unwrap_or_default() {
            let name = option.name.value.to_ascii_lowercase();
            let on = || option_flag(option.arg.as_ref());
            match name.as_str() {
                "analyze" => opts.analyze = on()?,
                "timing" => opts.timing = on()?,
                "summary" => {
                    opts.summary = on()?;
                    summary_set = true;
                }
                "costs" | "verbose" | "buffers" | "settings" | "wal" => {
                    on()?;
                }
                "format" => {
                    let format = option.arg.map(|a| a.to_string().to_ascii_lowercase());
                    if format.as_deref() != Some("text") {
                        return Err(Error::Unsupported(format!(
                            "EXPLAIN format {}",
                            format.unwrap_or_default()
                        )));
                    }
                }
                other => {
                    return Err(Error::Syntax(format!(
                        "unrecognized EXPLAIN option \"{other}\""
                    )));
                }
            }
        }
        if !summary_set {
            opts.summary = opts.analyze;
        }
        let analyze = opts.analyze;
        let fast = self.fast_path_on() && self.fast_statement(&statement).is_some();
        let (header, query) = match *statement {
            Statement::Query(q) => (None, Some(*q)),
            Statement::Update(u) => {
                if u.from.is_some() || !u.table.joins.is_empty() {
                    return Err(Error::Unsupported("EXPLAIN of UPDATE … FROM".into()));
                }
                let name = relation_name(&u.table);
                (
                    Some(format!("Update on {name}")),
                    Some(find_rows(u.table, u.selection)),
                )
            }
            Statement::Delete(d) => {
                if d.using.is_some() {
                    return Err(Error::Unsupported("EXPLAIN of DELETE … USING".into()));
                }
                let tables = match d.from {
                    FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
                };
                let [table] = <[TableWithJoins; 1]>::try_from(tables)
                    .map_err(|_| Error::Unsupported("DELETE from several tables".into()))?;
                let name = relation_name(&table);
                (
                    Some(format!("Delete on {name}")),
                    Some(find_rows(table, d.selection)),
                )
            }
            Statement::Insert(i) => {
                let name = i.table.to_string();
                let source = i
                    .source
                    .filter(|q| !matches!(q.body.as_ref(), SetExpr::Values(_)))
                    .map(|q| *q);
                if analyze {
                    return Err(Error::Unsupported("EXPLAIN ANALYZE of INSERT".into()));
                }
                (Some(format!("Insert on {name}")), source)
            }
            other => {
                return Err(Error::Unsupported(format!(
                    "EXPLAIN of {}",
                    other.to_string().split_whitespace().next().unwrap_or("")
                )));
            }
        };
        if analyze && header.is_some() {
            // Running the row-finding query would not show the write; keep it honest.
            return Err(Error::Unsupported(
                "EXPLAIN ANALYZE of UPDATE or DELETE".into(),
            ));
        }
        let mut lines = Vec::new();
        let depth = usize::from(header.is_some());
        if let Some(h) = header {
            lines.push(h);
        }
        if let Some(query) = query {
            let mut stmt = Statement::Query(Box::new(query));
            // EXPLAIN shows what a statement would do even where the scan guard refuses it;
            // EXPLAIN ANALYZE runs it, so the guard stays.
            self.guard_scans = analyze;
            let planned = self.physical_plan(&mut stmt).await;
            self.guard_scans = true;
            let plan = planned?;
            let mut elapsed = None;
            if analyze {
                let started = Instant::now();
                let task = self.ctx.task_ctx();
                let run = Arc::clone(&plan);
                self.db
                    .executor
                    .run(async move { datafusion::physical_plan::collect(run, task).await })
                    .await??;
                elapsed = Some(started.elapsed());
            }
            render(&plan, depth, &opts, &mut lines);
            if let Some(e) = elapsed.filter(|_| opts.summary) {
                lines.push(format!(
                    "Execution Time: {:.3} ms",
                    e.as_secs_f64() * 1000.0
                ));
            }
        }
        if fast {
            lines.push("Fast path: key access without DataFusion planning".into());
        }
        let schema = result_schema();
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(StringArray::from(lines))],
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        Ok(Output::from_batches(schema, vec![batch], "EXPLAIN"))
    }

    async fn physical_plan(&mut self, stmt: &mut Statement) -> Result<Arc<dyn ExecutionPlan>> {
        self.begin_statement(mentions_system_column(stmt));
        let functions = self.rewrite_correlated_subqueries(stmt).await?;
        let plan = self.plan(stmt.clone()).await?;
        drop(functions);
        let df = self.ctx.execute_logical_plan(plan).await?;
        Ok(df.create_physical_plan().await?)
    }
}

/// EXPLAIN's result: one `QUERY PLAN` text column.
pub(crate) fn result_schema() -> datafusion::arrow::datatypes::SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "QUERY PLAN",
        DataType::Utf8,
        false,
    )]))
}

fn relation_name(table: &TableWithJoins) -> String {
    match &table.relation {
        ast::TableFactor::Table { name, .. } => sql::ddl::table_name(name).unwrap_or_default(),
        other => other.to_string(),
    }
}

/// The query an UPDATE or DELETE runs to find its rows: the same table access.
fn find_rows(table: TableWithJoins, selection: Option<ast::Expr>) -> ast::Query {
    crate::dml::select_query(
        vec![SelectItem::Wildcard(WildcardAdditionalOptions::default())],
        vec![table],
        selection,
    )
}

/// What EXPLAIN shows: `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF)` as in PostgreSQL.
struct ExplainOptions {
    analyze: bool,
    timing: bool,
    summary: bool,
}

/// An EXPLAIN option's boolean argument (none means on).
fn option_flag(arg: Option<&ast::Expr>) -> Result<bool> {
    let Some(arg) = arg else {
        return Ok(true);
    };
    match arg.to_string().to_ascii_lowercase().trim_matches('\'') {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        other => Err(Error::Syntax(format!(
            "EXPLAIN option requires a Boolean value, not \"{other}\""
        ))),
    }
}

/// Appends the lines of `plan` at `depth`, PostgreSQL style.
fn render(
    plan: &Arc<dyn ExecutionPlan>,
    depth: usize,
    opts: &ExplainOptions,
    out: &mut Vec<String>,
) {
    let analyze = opts.analyze;
    if HIDDEN.contains(&plan.name()) && plan.children().len() == 1 {
        return render(plan.children()[0], depth, opts, out);
    }
    let head = if depth == 0 {
        String::new()
    } else {
        format!("{}->  ", " ".repeat(depth * 6 - 4))
    };
    let detail = " ".repeat(depth * 6 + 2);
    let actual = |plan: &Arc<dyn ExecutionPlan>| -> String {
        if !analyze {
            return String::new();
        }
        let Some(m) = plan.metrics() else {
            return String::new();
        };
        let rows = m.output_rows().unwrap_or(0);
        if !opts.timing {
            return format!(" (actual rows={rows})");
        }
        let ms = m.elapsed_compute().unwrap_or(0) as f64 / 1e6;
        format!(" (actual rows={rows} time={ms:.3} ms)")
    };
    if let Some(scan) = plan.downcast_ref::<KeyScanExec>() {
        let mut lines = scan.explain_lines(analyze).into_iter();
        if let Some(first) = lines.next() {
            out.push(format!("{head}{first}{}", actual(plan)));
        }
        out.extend(lines.map(|l| format!("{detail}{l}")));
        return;
    }
    if let Some(lookup) = plan.downcast_ref::<IndexLookupExec>() {
        let mut lines = lookup.explain_lines(analyze).into_iter();
        if let Some(first) = lines.next() {
            out.push(format!("{head}{first}{}", actual(plan)));
        }
        out.extend(lines.map(|l| format!("{detail}{l}")));
        render(lookup.child(), depth + 1, opts, out);
        return;
    }
    let text = displayable(plan.as_ref()).one_line().to_string();
    let text = text.trim_end().replacen("Exec", "", 1);
    out.push(format!("{head}{text}{}", actual(plan)));
    for child in plan.children() {
        render(child, depth + 1, opts, out);
    }
}
