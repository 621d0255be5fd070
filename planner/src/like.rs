//! `CREATE TABLE t (LIKE other [INCLUDING | EXCLUDING option …], …)`: the new table takes
//! `other`'s columns, with their names, types and NOT NULL, at the place of the LIKE among
//! its own. The options copy more, as PostgreSQL's do: DEFAULTS, GENERATED (expressions),
//! IDENTITY (a sequence of the new table's own), CONSTRAINTS (CHECKs), INDEXES (the primary
//! key, with its partition key, UNIQUE constraints and the other indexes, named for the new
//! table), COMMENTS; STATISTICS, STORAGE and COMPRESSION have nothing to copy; ALL is each.
//! Foreign keys are never copied.
//!
//! sqlparser reads LIKE only as a table's sole element with one option. Before parsing, each
//! LIKE element becomes a column whose name (the [`MARKER`] and the options) no SQL text
//! names and whose type is the source table's name ([`mark`]); CREATE TABLE writes such
//! columns out ([`expand`]) before anything reads them.

use crate::error::{Error, Result};
use crate::functions::text::quote_ident;
use crate::session::Session;
use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};
use sql::catalog::{Identity, TableDef};

/// How the name of a column standing for a LIKE element begins.
const MARKER: &str = "........like";

/// The options, in PostgreSQL's words.
const OPTIONS: &[&str] = &[
    "comments",
    "compression",
    "constraints",
    "defaults",
    "generated",
    "identity",
    "indexes",
    "statistics",
    "storage",
    "all",
];

/// Turns each `LIKE name [INCLUDING | EXCLUDING option]…` element of a CREATE TABLE's
/// parenthesized list into the column standing for it.
pub(crate) fn mark(tokens: &mut [TokenWithSpan]) {
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let significant =
        |tokens: &[TokenWithSpan], from: usize| (from..tokens.len()).find(|&j| !blank(&tokens[j]));
    let mut marked = 0;
    let mut at = 0;
    while at < tokens.len() {
        if !word(&tokens[at].token, "create") {
            at += 1;
            continue;
        }
        // CREATE [TEMP …] TABLE [IF NOT EXISTS] name (
        let mut j = at + 1;
        let mut table = false;
        while let Some(k) = significant(tokens, j) {
            let t = &tokens[k].token;
            j = k + 1;
            if word(t, "table") {
                table = true;
            } else if table && word(t, "as") {
                // CREATE TABLE … AS query.
                table = false;
                break;
            } else if table && *t == Token::LParen {
                break;
            } else if !matches!(t, Token::Word(_) | Token::Period) {
                table = false;
                break;
            }
        }
        at += 1;
        if !table {
            continue;
        }
        // The list's elements, from `(` (at j - 1).
        let mut depth = 1;
        let mut start = j;
        let mut k = j;
        while k < tokens.len() {
            match tokens[k].token {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        marked += usize::from(like_element(tokens, start, k, marked));
                        break;
                    }
                }
                Token::Comma if depth == 1 => {
                    marked += usize::from(like_element(tokens, start, k, marked));
                    start = k + 1;
                }
                _ => {}
            }
            k += 1;
        }
        at = k;
    }
}

fn blank(t: &TokenWithSpan) -> bool {
    matches!(t.token, Token::Whitespace(_))
}

/// Marks `tokens[from..to]` when it is a LIKE element: `LIKE` becomes the column's name and
/// the options blanks, leaving the source's name as the column's type.
fn like_element(tokens: &mut [TokenWithSpan], from: usize, to: usize, n: usize) -> bool {
    let words: Vec<usize> = (from..to).filter(|&j| !blank(&tokens[j])).collect();
    let is = |j: usize, w: &str| matches!(&tokens[j].token, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let Some((&like, rest)) = words.split_first() else {
        return false;
    };
    if !is(like, "like") {
        return false;
    }
    // The source's name: words joined by periods.
    let mut name_end = 0;
    while name_end < rest.len() {
        let expect_word = name_end % 2 == 0;
        match &tokens[rest[name_end]].token {
            Token::Word(_) if expect_word => name_end += 1,
            Token::Period if !expect_word => name_end += 1,
            _ => break,
        }
    }
    if name_end % 2 == 0 {
        return false;
    }
    let mut options = &rest[name_end..];
    let mut text = Vec::new();
    let mut taken = Vec::new();
    while let [verb, rest @ ..] = options {
        if !is(*verb, "including") && !is(*verb, "excluding") {
            return false;
        }
        // A verb with no option after it is left for the parser to refuse.
        let Some(&option) = rest.first() else {
            return false;
        };
        taken.push(*verb);
        // An option PostgreSQL does not know is left for the parser to point at.
        if !OPTIONS.iter().any(|w| is(option, w)) {
            break;
        }
        taken.push(option);
        text.push(format!("{} {}", tokens[*verb].token, tokens[option].token).to_lowercase());
        options = &rest[1..];
    }
    tokens[like].token = Token::Word(datafusion::sql::sqlparser::tokenizer::Word {
        value: format!("{MARKER}.{n} {}", text.join(" ")),
        quote_style: Some('"'),
        keyword: datafusion::sql::sqlparser::keywords::Keyword::NoKeyword,
    });
    for j in taken {
        tokens[j].token = Token::Whitespace(Whitespace::Space);
    }
    true
}

/// Whether `create` has a LIKE element.
pub(crate) fn has_like(create: &ast::CreateTable) -> bool {
    create
        .columns
        .iter()
        .any(|c| c.name.value.starts_with(MARKER))
}

/// What the options copy.
#[derive(Default)]
struct Copied {
    comments: bool,
    constraints: bool,
    defaults: bool,
    generated: bool,
    identity: bool,
    indexes: bool,
}

impl Copied {
    /// The options of a marked column's name, applied in order (`INCLUDING ALL EXCLUDING
    /// INDEXES` copies all but indexes).
    fn of(marker: &str) -> Copied {
        let mut copied = Copied::default();
        let words: Vec<&str> = marker.split(' ').skip(1).collect();
        for pair in words.chunks(2) {
            let [verb, option] = pair else { continue };
            let on = *verb == "including";
            let fields: Vec<&mut bool> = match *option {
                "comments" => vec![&mut copied.comments],
                "constraints" => vec![&mut copied.constraints],
                "defaults" => vec![&mut copied.defaults],
                "generated" => vec![&mut copied.generated],
                "identity" => vec![&mut copied.identity],
                "indexes" => vec![&mut copied.indexes],
                "all" => vec![
                    &mut copied.comments,
                    &mut copied.constraints,
                    &mut copied.defaults,
                    &mut copied.generated,
                    &mut copied.identity,
                    &mut copied.indexes,
                ],
                _ => vec![],
            };
            for field in fields {
                *field = on;
            }
        }
        copied
    }
}

/// A CREATE TABLE with its LIKE elements written out, and what is made after the table.
pub(crate) struct Expanded {
    pub create: ast::CreateTable,
    /// CREATE INDEX statements for the source's indexes (INCLUDING INDEXES).
    pub indexes: Vec<ast::Statement>,
    /// Column comments (INCLUDING COMMENTS): column name, text.
    pub comments: Vec<(String, String)>,
}

/// Writes out `create`'s LIKE elements from their source tables' definitions.
pub(crate) fn expand(session: &Session, create: &ast::CreateTable) -> Result<Expanded> {
    let table = sql::ddl::table_name(&create.name)?;
    let mut out = Expanded {
        create: create.clone(),
        indexes: Vec::new(),
        comments: Vec::new(),
    };
    out.create.columns.clear();
    for column in &create.columns {
        if !column.name.value.starts_with(MARKER) {
            out.create.columns.push(column.clone());
            continue;
        }
        // A table named as a type is (`LIKE date`) read as one.
        let source = match &column.data_type {
            ast::DataType::Custom(source, _) => sql::ddl::table_name(source)?,
            other => other.to_string().to_lowercase(),
        };
        let def = session.table_def(&source)?;
        let copied = Copied::of(&column.name.value);
        let (columns, constraints) = written_out(&def, &copied)?;
        // A serial's default names its sequence, which the new table would take for one of
        // its own when it has the name the source had when the sequence was made.
        if copied.defaults
            && let Some(c) = def.columns.iter().find(|c| {
                c.owned_sequence(&def.name).is_some_and(|seq| {
                    c.identity.is_none()
                        && seq == sql::catalog::serial_sequence_name(&table, &c.name)
                })
            })
        {
            return Err(Error::Unsupported(format!(
                "copying the default of serial column \"{}\" into a table named \"{table}\": \
                 its sequence would become the new table's own (name the new table \
                 otherwise, or set the default after)",
                c.name
            )));
        }
        out.create.columns.extend(columns);
        out.create.constraints.extend(constraints);
        if copied.comments {
            out.comments.extend(
                def.columns
                    .iter()
                    .filter(|c| !c.hidden)
                    .filter_map(|c| Some((c.name.clone(), c.comment.clone()?))),
            );
        }
        if copied.indexes {
            for index in def.indexes.iter().filter(|i| !i.constraint) {
                let columns: Vec<String> = index
                    .columns
                    .iter()
                    .map(|p| {
                        let c = crate::expression_index::in_definition(&def, p.column);
                        if p.desc { format!("{c} DESC") } else { c }
                    })
                    .collect();
                let mut text = format!(
                    "CREATE {}INDEX ON {} ({})",
                    if index.unique { "UNIQUE " } else { "" },
                    quote_ident(&table),
                    columns.join(", ")
                );
                if !index.include.is_empty() {
                    let include: Vec<String> = index
                        .include
                        .iter()
                        .map(|&c| quote_ident(&def.columns[c].name))
                        .collect();
                    text.push_str(&format!(" INCLUDE ({})", include.join(", ")));
                }
                if let Some(predicate) = &index.predicate {
                    text.push_str(&format!(" WHERE {predicate}"));
                }
                out.indexes.extend(crate::session::parse_sql(&text)?);
            }
        }
    }
    Ok(out)
}

/// The column definitions and table constraints a LIKE of `def` stands for.
fn written_out(
    def: &TableDef,
    copied: &Copied,
) -> Result<(Vec<ast::ColumnDef>, Vec<ast::TableConstraint>)> {
    let mut elements = Vec::new();
    for column in def.columns.iter().filter(|c| !c.hidden) {
        let mut text = format!("{} {}", quote_ident(&column.name), column.ty);
        if !column.nullable {
            text.push_str(" NOT NULL");
        }
        match (&column.identity, &column.generated, &column.default) {
            (Some(identity), _, _) if copied.identity => {
                let how = match identity {
                    Identity::Always => "ALWAYS",
                    Identity::ByDefault => "BY DEFAULT",
                };
                text.push_str(&format!(" GENERATED {how} AS IDENTITY"));
                if let Some(o) = &column.sequence_options {
                    text.push_str(&format!(
                        " (START WITH {} INCREMENT BY {} MINVALUE {} MAXVALUE {} CACHE {}{})",
                        o.start,
                        o.increment,
                        o.min,
                        o.max,
                        o.cache,
                        if o.cycle { " CYCLE" } else { "" }
                    ));
                }
            }
            (Some(_), _, _) => {}
            (None, Some(expr), _) if copied.generated => {
                text.push_str(&format!(" GENERATED ALWAYS AS ({expr}) STORED"));
            }
            (None, None, Some(default)) if copied.defaults => {
                text.push_str(&format!(" DEFAULT {default}"));
            }
            _ => {}
        }
        elements.push(text);
    }
    if copied.constraints {
        for check in &def.checks {
            elements.push(format!(
                "CONSTRAINT {} CHECK ({})",
                quote_ident(&check.name),
                check.expr
            ));
        }
    }
    if copied.indexes {
        if !def.has_row_id() {
            let names = |columns: &mut dyn Iterator<Item = usize>| -> Vec<String> {
                columns.map(|c| quote_ident(&def.columns[c].name)).collect()
            };
            let partition = names(&mut def.partition_key.iter().copied()).join(", ");
            let mut parts = vec![match def.hash_buckets {
                0 => format!("({partition})"),
                _ => format!("({partition}) HASH"),
            }];
            for part in &def.row_key {
                let name = quote_ident(&def.columns[part.column].name);
                parts.push(if part.desc {
                    format!("{name} DESC")
                } else {
                    name
                });
            }
            elements.push(format!("PRIMARY KEY ({})", parts.join(", ")));
        }
        for index in def.indexes.iter().filter(|i| i.constraint) {
            let columns: Vec<String> = index
                .columns
                .iter()
                .map(|p| quote_ident(&def.columns[p.column].name))
                .collect();
            elements.push(format!("UNIQUE ({})", columns.join(", ")));
        }
    }
    let text = format!("CREATE TABLE t ({})", elements.join(", "));
    match crate::session::parse_sql(&text)?.into_iter().next() {
        Some(ast::Statement::CreateTable(t)) => Ok((t.columns, t.constraints)),
        _ => Err(Error::Internal(format!("not a CREATE TABLE: {text}"))),
    }
}

/// Sets the comments [`expand`] copied on table `table`'s columns.
pub(crate) fn comment_columns(
    session: &mut Session,
    table: &str,
    comments: &[(String, String)],
) -> Result<()> {
    if comments.is_empty() {
        return Ok(());
    }
    let txn = session.open_txn()?;
    let mut def = TableDef::clone(&*session.table_def(table)?);
    for (name, text) in comments {
        if let Some(i) = def.column_index(name) {
            def.columns[i].comment = Some(text.clone());
        }
    }
    crate::ddl::store_def(session, &txn, def)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(text: &str) -> ast::CreateTable {
        match crate::session::parse_sql(text).unwrap().into_iter().next() {
            Some(ast::Statement::CreateTable(c)) => c,
            other => panic!("not a CREATE TABLE: {other:?}"),
        }
    }

    #[test]
    fn like_elements_become_marked_columns_in_place() {
        let c = create(
            "CREATE TABLE t (a int, LIKE public.\"Src\" INCLUDING ALL EXCLUDING INDEXES, b text)",
        );
        let names: Vec<&str> = c.columns.iter().map(|c| c.name.value.as_str()).collect();
        assert_eq!(names[0], "a");
        assert_eq!(names[2], "b");
        assert!(has_like(&c));
        let copied = Copied::of(names[1]);
        assert!(copied.defaults && copied.constraints && copied.comments);
        assert!(!copied.indexes);
        assert_eq!(c.columns[1].data_type.to_string(), "public.\"Src\"");
    }

    #[test]
    fn other_likes_are_left_alone() {
        let c = create("CREATE TABLE t AS SELECT a FROM u WHERE (a LIKE 'x')");
        assert!(!has_like(&c));
        let c = create("CREATE TABLE t (a text CHECK (a LIKE 'x%'))");
        assert!(!has_like(&c));
        // An option PostgreSQL does not know stays a syntax error, pointed at.
        let e = crate::session::parse_sql("CREATE TABLE t (LIKE u INCLUDING bogus)").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }
}
