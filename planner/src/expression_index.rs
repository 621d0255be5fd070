//! Expression indexes: `CREATE INDEX ON users (lower(email))`.
//!
//! Each indexed expression is a hidden generated column of its table (`hidden` and
//! `generated` both set), and the index is an ordinary index over that column: its
//! entries, its uniqueness checks and its backfill are those of any index. Index
//! maintenance computes the expression from the row's other columns for the old row as for
//! the new one (`computed`), so the value a row stores there is never read: CREATE INDEX
//! writes no row (rows keep their `_etag`), and rows stored before it read NULL there.
//! Indexes over the same expression share its column; when the last of them is dropped,
//! the column is dropped too (`release`).
//!
//! A query reads such an index when its conditions compare the expression: the scan's
//! filters have each occurrence of it replaced by the index's column (`substitute`) and are
//! then classified against the index like any other. The replacement is exact, not a
//! guess: the index holds the expression's value as the same analysis computes it, and an
//! occurrence is replaced only when it is that analyzed expression (qualifiers, literal
//! types and casts between text types aside). An expression whose value is not fixed by
//! the row (a volatile or stable function, the time zone, DateStyle) is refused when the
//! index is made, as PostgreSQL refuses what is not IMMUTABLE.

use crate::error::{Error, Result};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::{Expr as DfExpr, ExprSchemable};
use datafusion::sql::sqlparser::ast;
use sql::catalog::{ColumnDef, IndexDef, TableDef};
use sql::types::SqlType;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use storage::Value;

/// Whether `column` holds an index expression.
pub(crate) fn is_expression(column: &ColumnDef) -> bool {
    column.hidden && column.generated.is_some()
}

/// The column of `def` that holds index key expression `expr`, added (hidden, generated,
/// nullable) unless an index over the same expression has one. Refuses what PostgreSQL
/// refuses in an index expression: a subquery (0A000), an aggregate (42803), a window
/// function (42P20), a function whose value is not fixed by its arguments (42P17), a
/// column of another table (42P01) or none (42703).
pub(crate) fn column_for(def: &mut TableDef, expr: &ast::Expr) -> Result<usize> {
    refuse(def, expr)?;
    let text = stored_text(expr);
    let ty = value_type(def, &text)?;
    let existing = def
        .columns
        .iter()
        .position(|c| is_expression(c) && c.generated.as_deref() == Some(&text) && c.ty == ty);
    if let Some(i) = existing {
        return Ok(i);
    }
    // A name no SQL text names, as a dropped column's.
    let name = format!("........pg.expression.{}........", def.columns.len() + 1);
    def.columns.push(ColumnDef {
        hidden: true,
        generated: Some(text),
        ..ColumnDef::new(name, ty)
    });
    def.schema_version += 1;
    Ok(def.columns.len() - 1)
}

/// The column of `def` an index over `expr` keeps it in, if one does: what `ON CONFLICT
/// (lower(email))` names. Expressions are compared as analyzed (`lower(Email)` and
/// `lower((email))` are `lower(email)`); one naming no column of `def` is 42703.
pub(crate) fn existing(def: &TableDef, expr: &ast::Expr) -> Result<Option<usize>> {
    let text = stored_text(expr);
    let expressions = || {
        def.columns
            .iter()
            .enumerate()
            .filter(|(_, c)| is_expression(c))
    };
    if let Some((i, _)) = expressions().find(|(_, c)| c.generated.as_deref() == Some(&text)) {
        return Ok(Some(i));
    }
    let schema = crate::conditions::row_schema(def);
    let (target, df_schema, _) = crate::conditions::analyzed(&text, &schema)?;
    let target = canonical(target, &df_schema);
    for (i, column) in expressions() {
        let Some(generated) = &column.generated else {
            continue;
        };
        let (e, s, _) = crate::conditions::analyzed(generated, &schema)?;
        if canonical(e, &s) == target {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Index expression `expr` as its column keeps it: unparenthesized, function names in
/// lower case, columns unqualified.
fn stored_text(expr: &ast::Expr) -> String {
    let mut expr = expr.clone();
    while let ast::Expr::Nested(inner) = expr {
        expr = *inner;
    }
    // Function names as PostgreSQL shows them (`lower(email)`, whatever was typed).
    let _ = ast::visit_expressions_mut(&mut expr, |e| {
        if let ast::Expr::Function(f) = e {
            for part in f.name.0.iter_mut() {
                if let ast::ObjectNamePart::Identifier(id) = part
                    && id.quote_style.is_none()
                {
                    id.value = id.value.to_lowercase();
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    sql::ddl::bare_condition(&expr)
}

/// Whether the row `values` of `def` needs index expression column `column`: an index over
/// it covers the row (a partial index's condition holds). Others are not computed, as
/// PostgreSQL computes no expression for a row a partial index leaves out (`(v::int)
/// WHERE kind = 'num'` over a row of another kind).
pub(crate) fn needed(def: &TableDef, column: usize, values: &[Value]) -> Result<bool> {
    for index in &def.indexes {
        let over =
            index.columns.iter().any(|p| p.column == column) || index.include.contains(&column);
        if over && crate::index::covers(def, index, values)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `values` (a whole stored row of `def`) with its index expressions computed from its
/// other columns: what index maintenance reads, whatever the row stored there.
pub(crate) fn computed<'a>(
    def: &TableDef,
    values: &'a [Value],
) -> Result<std::borrow::Cow<'a, [Value]>> {
    if !def.columns.iter().any(is_expression) {
        return Ok(std::borrow::Cow::Borrowed(values));
    }
    let mut values = values.to_vec();
    crate::conditions::generate_expressions(def, &mut values)?;
    Ok(std::borrow::Cow::Owned(values))
}

/// The type of index expression `text`'s values over `def`'s rows, refusing an expression
/// whose value depends on the session (42P17) or whose type cannot be in a key.
fn value_type(def: &TableDef, text: &str) -> Result<SqlType> {
    let schema = crate::conditions::row_schema(def);
    let (analyzed, df_schema, _) = crate::conditions::analyzed(text, &schema)?;
    // Analyzed in another time zone, an expression that reads the session's zone (a
    // timestamptz cast to a date) comes out another expression.
    let elsewhere = crate::conditions::analyzed_in(text, &schema, "Asia/Kathmandu")?.0;
    let reason = match canonical(elsewhere, &df_schema) == canonical(analyzed.clone(), &df_schema) {
        true => session_dependent(&analyzed, &df_schema),
        false => Some("it follows the time zone".to_string()),
    };
    if let Some(reason) = reason {
        return Err(Error::InvalidObjectDefinition(format!(
            "functions in index expression must be marked IMMUTABLE ({reason})"
        )));
    }
    let (_, field) = analyzed.to_field(&df_schema)?;
    // A decimal keeps its scale: the values are stored as the expression computes them.
    let decimal = match field.data_type() {
        DataType::Decimal128(p, s) if *s >= 0 => Some(SqlType::Numeric {
            precision: Some(u16::from(*p)),
            scale: Some(*s as u8),
        }),
        _ => None,
    };
    sql::types::enum_type(&field)
        .or(decimal)
        .or_else(|| crate::casts::declared(&field))
        .or_else(|| crate::session::sql_type_of(field.data_type()))
        .filter(|ty| ty.scalar().is_keyable())
        .ok_or_else(|| {
            let oid = crate::pg_catalog::field_type_oid(&field);
            Error::Sql(sql::Error::InvalidDefinition(format!(
                "an expression of type {} cannot be indexed",
                crate::pg_catalog::format_type(i64::from(oid), None)
            )))
        })
}

/// Gives each expression column of `def` the type of its expression's values again, after
/// ALTER COLUMN … TYPE changed a column it reads (PostgreSQL rebuilds such an index).
pub(crate) fn retype(def: &mut TableDef) -> Result<()> {
    for i in 0..def.columns.len() {
        if is_expression(&def.columns[i]) {
            let text = def.columns[i].generated.clone().unwrap_or_default();
            def.columns[i].ty = value_type(def, &text)?;
        }
    }
    Ok(())
}

/// Refuses a subquery, an aggregate, a window function, a volatile function or a column
/// of another table in `expr`.
fn refuse(def: &TableDef, expr: &ast::Expr) -> Result<()> {
    let aggregates = crate::dml::scratch_context("UTC", None).state();
    let mut refused = None;
    let _ = ast::visit_expressions(expr, |e| {
        refused = match e {
            ast::Expr::CompoundIdentifier(parts)
                if parts.len() > 1
                    && sql::ddl::normalize_ident(&parts[parts.len() - 2]) != def.name =>
            {
                Some(Error::Sql(sql::Error::UnknownTable(
                    parts[parts.len() - 2].value.clone(),
                )))
            }
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
                Some(Error::NotSupported {
                    message: "cannot use subquery in index expression".into(),
                    detail: None,
                })
            }
            ast::Expr::Function(f) => {
                let name = f.name.to_string().to_ascii_lowercase();
                let name = name.trim_start_matches("pg_catalog.");
                if f.over.is_some() {
                    Some(Error::Windowing(
                        "window functions are not allowed in index expressions".into(),
                    ))
                } else if aggregates.aggregate_functions().contains_key(name) {
                    Some(Error::Grouping(
                        "aggregate functions are not allowed in index expressions".into(),
                    ))
                } else if crate::index::VOLATILE.contains(&name) || STABLE.contains(&name) {
                    Some(Error::InvalidObjectDefinition(
                        "functions in index expression must be marked IMMUTABLE".into(),
                    ))
                } else {
                    None
                }
            }
            _ => None,
        };
        match refused {
            Some(_) => std::ops::ControlFlow::Break(()),
            None => std::ops::ControlFlow::Continue(()),
        }
    });
    refused.map_or(Ok(()), Err)
}

/// Functions PostgreSQL marks STABLE: their value follows settings (the time zone,
/// DateStyle) or the database, so an index may not hold it.
const STABLE: &[&str] = &[
    "to_char",
    "age",
    "to_timestamp",
    "current_setting",
    "current_user",
    "session_user",
    "current_database",
    "current_schema",
    "version",
];

/// Why analyzed expression `e` has a value that the row alone does not fix: a function
/// that is not immutable, a timestamp with time zone (its date, its fields, its text all
/// follow the session's time zone) unless read in a zone named by a constant or only tested
/// for NULL, or a date or time turned into text (which follows DateStyle).
fn session_dependent(e: &DfExpr, schema: &DFSchema) -> Option<String> {
    use datafusion::logical_expr::Volatility;
    let temporal = |t: &DataType| {
        matches!(
            t,
            DataType::Timestamp(..)
                | DataType::Date32
                | DataType::Date64
                | DataType::Time64(_)
                | DataType::Time32(_)
                | DataType::Interval(_)
        )
    };
    let mut reason = None;
    let _ = e.apply(|node| {
        // `at AT TIME ZONE 'UTC'`, `at IS NULL`: fixed by the row.
        // Only a column read in the zone: anything computed on the timestamptz before it
        // (`date_trunc('day', at)`, `at + interval '1 day'`) follows the session's zone.
        let fixed = match node {
            DfExpr::ScalarFunction(f) => {
                f.name() == "timezone"
                    && matches!(f.args.as_slice(), [DfExpr::Literal(..), DfExpr::Column(_)])
                    && node
                        .get_type(schema)
                        .is_ok_and(|t| matches!(t, DataType::Timestamp(_, None)))
            }
            DfExpr::IsNull(_) | DfExpr::IsNotNull(_) => true,
            _ => false,
        };
        if let DfExpr::ScalarFunction(f) = node
            && f.func.signature().volatility != Volatility::Immutable
        {
            reason = Some(format!("{} is not immutable", f.name()));
            return Ok(TreeNodeRecursion::Stop);
        }
        if fixed {
            return Ok(TreeNodeRecursion::Jump);
        }
        let Ok(ty) = node.get_type(schema) else {
            return Ok(TreeNodeRecursion::Continue);
        };
        if matches!(ty, DataType::Timestamp(_, Some(_))) {
            reason = Some("timestamp with time zone".to_string());
        } else if matches!(
            ty,
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        ) {
            let inputs: Vec<&DfExpr> = match node {
                DfExpr::Cast(c) => vec![c.expr.as_ref()],
                DfExpr::TryCast(c) => vec![c.expr.as_ref()],
                DfExpr::ScalarFunction(f) => f.args.iter().collect(),
                _ => Vec::new(),
            };
            if inputs
                .iter()
                .any(|i| i.get_type(schema).is_ok_and(|t| temporal(&t)))
            {
                reason = Some("a date or time as text".to_string());
            }
        }
        Ok(match reason {
            Some(_) => TreeNodeRecursion::Stop,
            None => TreeNodeRecursion::Continue,
        })
    });
    reason
}

/// Drops the expression columns of `def` no index reads any more (DROP INDEX, DROP COLUMN):
/// they become dropped columns, whose stored values are never read again.
pub(crate) fn release(def: &mut TableDef) {
    for i in 0..def.columns.len() {
        let used = def
            .indexes
            .iter()
            .any(|x| x.columns.iter().any(|p| p.column == i) || x.include.contains(&i));
        if is_expression(&def.columns[i]) && !used {
            let column = &mut def.columns[i];
            column.name = format!("........pg.dropped.{}........", i + 1);
            column.generated = None;
        }
    }
}

/// Whether `index` of `def` holds an expression that reads column `name`.
pub(crate) fn reads(def: &TableDef, index: &IndexDef, name: &str) -> bool {
    index.columns.iter().any(|p| {
        let column = &def.columns[p.column];
        is_expression(column)
            && column
                .generated
                .as_deref()
                .is_some_and(|g| crate::ddl::reads_column(g, name).unwrap_or(true))
    })
}

/// How an index shows key column `column` of `def`: its quoted name, or the expression as
/// `pg_get_indexdef` shows one column (`lower(email)`, `(a + b)`).
pub(crate) fn shown(def: &TableDef, column: usize) -> String {
    let col = &def.columns[column];
    match col.generated.as_deref().filter(|_| col.hidden) {
        Some(text) => match crate::dml::parse_expr(text) {
            Ok(ast::Expr::Function(_)) => text.to_string(),
            _ => format!("({text})"),
        },
        None => crate::functions::text::quote_ident(&col.name),
    }
}

/// How the index's statement shows key column `column` (`pg_get_indexdef(index)`): an
/// expression that is not a function call in parentheses of its own, as PostgreSQL writes
/// it (`((a + b))`), so that the statement runs again.
pub(crate) fn in_definition(def: &TableDef, column: usize) -> String {
    let text = shown(def, column);
    match is_expression(&def.columns[column]) && text.starts_with('(') {
        true => format!("({text})"),
        false => text,
    }
}

/// The name of the index table's column for base column `column`: the column's own, or
/// for an expression its text (which EXPLAIN then shows in the index's conditions).
pub(crate) fn index_column_name(def: &TableDef, column: usize) -> String {
    let col = &def.columns[column];
    match col.generated.as_deref().filter(|_| col.hidden) {
        // Unless a column of the table has that name (`"lower(email)"`).
        Some(text) if !def.columns.iter().any(|c| c.name == text) => text.to_string(),
        _ => col.name.clone(),
    }
}

/// The names of an index's columns (base columns `columns`, key then INCLUDE) as
/// `pg_attribute` gives them: a column's own, `lower` for a function call, `expr` for any
/// other expression, numbered when taken (`lower1`), as PostgreSQL chooses them.
pub(crate) fn attribute_names(def: &TableDef, columns: &[usize]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for &c in columns {
        let name = crate::index::free_name(&figure_name(def, c), |n| names.iter().any(|x| x == n));
        names.push(name);
    }
    names
}

/// PostgreSQL's name for an index column over column `column` of `def` (FigureColname).
pub(crate) fn figure_name(def: &TableDef, column: usize) -> String {
    let col = &def.columns[column];
    let Some(text) = col.generated.as_deref().filter(|_| col.hidden) else {
        return col.name.clone();
    };
    fn figure(e: &ast::Expr) -> Option<String> {
        match e {
            ast::Expr::Function(f) => f.name.0.last()?.as_ident().map(|i| i.value.clone()),
            ast::Expr::Identifier(id) => Some(id.value.clone()),
            ast::Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
            ast::Expr::Nested(inner) => figure(inner),
            ast::Expr::Cast { expr, .. } => figure(expr),
            ast::Expr::Case { .. } => Some("case".into()),
            _ => None,
        }
    }
    crate::dml::parse_expr(text)
        .ok()
        .and_then(|e| figure(&e))
        .unwrap_or_else(|| "expr".into())
}

/// An index expression as a scan's filters hold it (`matcher`), and whether it can be NULL.
type Matcher = (DfExpr, bool);
type Matchers = HashMap<(String, Vec<(String, String, bool)>), Option<Matcher>>;
static MATCHERS: LazyLock<Mutex<Matchers>> = LazyLock::new(Default::default);

/// Expression column `column` of `def` as a scan's filters hold it: analyzed, simplified
/// as the optimizer simplifies, in `canonical` form; with whether its value can be NULL
/// (a row with a NULL there has no entry). Kept per text and table columns.
fn matcher(def: &TableDef, column: usize) -> Option<Matcher> {
    let text = def.columns[column].generated.clone()?;
    let key = (
        text.clone(),
        def.columns
            .iter()
            .map(|c| (c.name.clone(), c.ty.to_string(), c.nullable))
            .collect(),
    );
    if let Some(kept) = MATCHERS.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return kept.clone();
    }
    // Declared nullability, which the row schema conditions are planned over leaves out.
    let schema = std::sync::Arc::new(datafusion::arrow::datatypes::Schema::new(
        def.columns
            .iter()
            .map(|c| c.ty.field(&c.name, c.nullable))
            .collect::<Vec<_>>(),
    ));
    let made = crate::conditions::analyzed(&text, &schema)
        .ok()
        .map(|(expr, df_schema, _)| {
            let nullable = !never_null(&expr, &df_schema);
            let shape = canonical(crate::conditions::simplified(expr, &df_schema), &df_schema);
            (shape, nullable)
        });
    let mut kept = MATCHERS.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= 1024 {
        kept.clear();
    }
    kept.insert(key, made.clone());
    made
}

/// `e` (over the columns of `schema`) without what does not change its value: qualifiers,
/// aliases, the types of literals, casts to the type a value has (`email::text` of a
/// varchar, as pg_dump and Rails' schema write an index over it).
fn canonical(e: DfExpr, schema: &DFSchema) -> DfExpr {
    // Text is text in any of Arrow's string layouts.
    let family = |t: &DataType| match t {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
        other => other.clone(),
    };
    let same_type = |c: &datafusion::logical_expr::Cast| {
        let declared = sql::types::declared_type_name(&c.field);
        declared.is_none_or(|t| t == "text" || t == "character varying")
            && c.expr
                .get_type(schema)
                .is_ok_and(|t| family(&t) == family(c.field.data_type()))
    };
    e.transform_up(|e| {
        Ok(match e {
            DfExpr::Cast(c) if same_type(&c) => Transformed::yes(*c.expr),
            other => crate::index::bare(other),
        })
    })
    .map(|t| t.data)
    .unwrap_or_else(|e| DfExpr::Literal(ScalarValue::Utf8(Some(e.to_string())), None))
}

/// `filters` (a scan's, over `def`'s columns) with each occurrence of one of `index`'s key
/// expressions replaced by the index table's column for it (`index_column_name`). Filters
/// that hold none come back as they were.
pub(crate) fn substitute(def: &TableDef, index: &IndexDef, filters: &[DfExpr]) -> Vec<DfExpr> {
    let targets: Vec<(DfExpr, String)> = index
        .columns
        .iter()
        .filter(|p| is_expression(&def.columns[p.column]))
        .filter_map(|p| Some((matcher(def, p.column)?.0, index_column_name(def, p.column))))
        // One that simplifies to a constant (`a IS NULL` of a NOT NULL column) would take
        // the place of every equal constant.
        .filter(|(m, _)| !matches!(m, DfExpr::Literal(..)))
        .collect();
    if targets.is_empty() {
        return filters.to_vec();
    }
    let schema = crate::conditions::row_schema(def);
    let Ok(schema) = DFSchema::try_from(schema.as_ref().clone()) else {
        return filters.to_vec();
    };
    filters
        .iter()
        .map(|f| {
            f.clone()
                .transform_down(|e| {
                    let shape = canonical(e.clone(), &schema);
                    Ok(match targets.iter().find(|(t, _)| *t == shape) {
                        Some((_, name)) => Transformed::new(
                            DfExpr::Column(datafusion::common::Column::new_unqualified(name)),
                            true,
                            TreeNodeRecursion::Jump,
                        ),
                        None => Transformed::no(e),
                    })
                })
                .map(|t| t.data)
                .unwrap_or_else(|_| f.clone())
        })
        .collect()
}

/// Whether column `column` of `def` can be NULL: a nullable column, or an expression over
/// one (that cannot be shown otherwise). A NULL has no index entry, so an index over such a
/// column serves only conditions that exclude it.
pub(crate) fn nullable(def: &TableDef, column: usize) -> bool {
    match is_expression(&def.columns[column]) {
        true => matcher(def, column).is_none_or(|(_, nullable)| nullable),
        false => def.columns[column].nullable,
    }
}

/// Functions whose value is not NULL when no argument is.
const STRICT: &[&str] = &[
    "lower",
    "upper",
    "btrim",
    "ltrim",
    "rtrim",
    "trim",
    "md5",
    "abs",
    "length",
    "char_length",
    "character_length",
    "octet_length",
    "initcap",
    "reverse",
    "left",
    "right",
    "lpad",
    "rpad",
    "replace",
    "concat",
    "concat_ws",
    "substr",
    "round",
    "trunc",
    "floor",
    "ceil",
    "date_trunc",
    "date_part",
    "partita_extract",
];

/// Whether analyzed expression `e` is never NULL: its columns are NOT NULL and nothing in
/// it makes a NULL of values (DataFusion takes any function call as nullable).
fn never_null(e: &DfExpr, schema: &DFSchema) -> bool {
    match e {
        DfExpr::Column(_) | DfExpr::Literal(..) => !e.nullable(schema).unwrap_or(true),
        DfExpr::Alias(a) => never_null(&a.expr, schema),
        DfExpr::Cast(c) => never_null(&c.expr, schema),
        DfExpr::BinaryExpr(b) => {
            use datafusion::logical_expr::Operator as O;
            matches!(
                b.op,
                O::Plus
                    | O::Minus
                    | O::Multiply
                    | O::StringConcat
                    | O::Eq
                    | O::NotEq
                    | O::Lt
                    | O::LtEq
                    | O::Gt
                    | O::GtEq
            ) && never_null(&b.left, schema)
                && never_null(&b.right, schema)
        }
        DfExpr::IsNull(_) | DfExpr::IsNotNull(_) => true,
        DfExpr::ScalarFunction(f) => {
            STRICT.contains(&f.name()) && f.args.iter().all(|a| never_null(a, schema))
        }
        _ => false,
    }
}
