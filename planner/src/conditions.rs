//! Expressions over one row of a table, planned once and evaluated row by row: CHECK
//! constraints, generated columns and materialized views' WHERE conditions.
//!
//! CHECK: each row written (INSERT, UPDATE, upsert, COPY) must make every condition of its
//! table true or NULL, as in PostgreSQL; a false one is 23514 naming the constraint and
//! listing the row.
//!
//! Generated columns (`GENERATED ALWAYS AS (expr) STORED`): each row written stores the
//! expression's value over its other columns, computed before its checks (`generate`).
//! As in PostgreSQL the expression may not read another generated column, call a volatile
//! function, hold a subquery or aggregate.
//!
//! A condition is planned into a physical expression over the table's stored columns, kept
//! process-wide by its kind, text and the schema it was planned against (not by keyspace:
//! keyspace numbers are unique only within one database, and one process may open
//! several), and evaluated on a one-row batch. A CHECK is planned with the session's
//! functions and semantics rules; a view's WHERE with DataFusion's, as it always was.

use crate::convert::ColumnBuilder;
use crate::error::{Error, Result};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::DFSchema;
use datafusion::logical_expr::{
    EmptyRelation, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder,
};
use datafusion::physical_expr::PhysicalExpr;
use sql::TableDef;
use sql::catalog::CheckDef;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use storage::Value;

/// Which kind of condition, which decides how it is planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A CHECK constraint: planned as a query's expressions are.
    Check,
    /// A materialized view's WHERE: planned with DataFusion's own semantics, as views
    /// stored before CHECK constraints existed were, so their rows stay what they were.
    ViewWhere,
    /// A generated column's value: its expression cast to the column's type, planned as a
    /// CHECK is.
    Generated,
}

type Planned = HashMap<(Kind, String), Vec<(Arc<Schema>, Arc<dyn PhysicalExpr>)>>;
static PLANNED: LazyLock<Mutex<Planned>> = LazyLock::new(Default::default);

/// The schema conditions over `def`'s rows are planned against: every stored column.
pub(crate) fn row_schema(def: &TableDef) -> Arc<Schema> {
    Arc::new(Schema::new(
        def.columns
            .iter()
            .map(|c| c.ty.field(&c.name, true))
            .collect::<Vec<_>>(),
    ))
}

/// A stored row of `def` as a one-row batch of `schema` (`row_schema(def)`).
pub(crate) fn row_batch(
    def: &TableDef,
    schema: &Arc<Schema>,
    values: &[Value],
) -> Result<RecordBatch> {
    let columns = def
        .columns
        .iter()
        .zip(values)
        .map(|(c, v)| {
            ColumnBuilder::single(c.ty, v)
                .ok_or_else(|| Error::Internal(format!("column {} does not convert", c.name)))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)
        .map_err(datafusion::error::DataFusionError::from)?)
}

/// Whether `condition` holds for the one row of `batch`: `None` when it is NULL.
pub(crate) fn holds(
    condition: &Arc<dyn PhysicalExpr>,
    batch: &RecordBatch,
) -> Result<Option<bool>> {
    let result = condition.evaluate(batch)?.into_array(1)?;
    let result = result
        .as_boolean_opt()
        .ok_or_else(|| Error::Internal("condition is not boolean".into()))?;
    Ok(result.is_valid(0).then(|| result.value(0)))
}

/// Condition `text` over a table's columns (`schema`), planned once per kind, text and
/// schema.
pub(crate) fn condition(
    kind: Kind,
    text: &str,
    schema: &Arc<Schema>,
) -> Result<Arc<dyn PhysicalExpr>> {
    let key = (kind, text.to_string());
    let kept = PLANNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .and_then(|planned| {
            planned
                .iter()
                .find(|(s, _)| s == schema)
                .map(|(_, e)| Arc::clone(e))
        });
    if let Some(e) = kept {
        return Ok(e);
    }
    let planned = match kind {
        Kind::Check => plan(text, schema, true)?,
        Kind::Generated => plan(text, schema, false)?,
        Kind::ViewWhere => {
            let ctx = datafusion::execution::context::SessionContext::new();
            crate::functions::register(&ctx);
            let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
            let expr = ctx.parse_sql_expr(text, &df_schema)?;
            ctx.create_physical_expr(expr, &df_schema)?
        }
    };
    let mut kept = PLANNED.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= 1024 {
        kept.clear();
    }
    kept.entry(key)
        .or_default()
        .push((Arc::clone(schema), Arc::clone(&planned)));
    Ok(planned)
}

/// Plans expression `text` over a table's columns (unqualified: `ddl::check_def` keeps
/// column names bare) through the analyzer, as a query's expressions are (type coercion,
/// PostgreSQL's numeric and text semantics); refuses a CHECK (`condition`) that is not a
/// boolean (42804).
fn plan(text: &str, schema: &Arc<Schema>, condition: bool) -> Result<Arc<dyn PhysicalExpr>> {
    let (expr, df_schema, state) = analyzed(text, schema)?;
    let (_, field) = expr.to_field(&df_schema)?;
    if condition && field.data_type() != &DataType::Boolean {
        let oid = crate::pg_catalog::field_type_oid(&field);
        return Err(Error::DatatypeMismatch(format!(
            "argument of CHECK must be type boolean, not type {}",
            crate::pg_catalog::format_type(i64::from(oid), None)
        )));
    }
    Ok(state.create_physical_expr(simplified(expr, &df_schema), &df_schema)?)
}

/// `expr` as the optimizer simplifies a query's expressions, which some functions need
/// before they run (`coalesce` becomes a CASE). Left as it is when it calls a function
/// that is not immutable: the simplifier would evaluate `now()` once, and the plan is kept.
pub(crate) fn simplified(expr: Expr, schema: &Arc<DFSchema>) -> Expr {
    use datafusion::common::tree_node::TreeNode;
    use datafusion::logical_expr::Volatility;
    use datafusion::logical_expr::simplify::SimplifyContext;
    use datafusion::optimizer::simplify_expressions::ExprSimplifier;
    let fixed = !expr
        .exists(|e| {
            Ok(matches!(e, Expr::ScalarFunction(f)
                if f.func.signature().volatility != Volatility::Immutable))
        })
        .unwrap_or(true);
    if !fixed {
        return expr;
    }
    let context = SimplifyContext::builder()
        .with_schema(Arc::clone(schema))
        .build();
    ExprSimplifier::new(context)
        .simplify(expr.clone())
        .unwrap_or(expr)
}

/// Expression `text` over a table's columns (`schema`, names bare) as the analyzer leaves
/// it (types coerced, PostgreSQL's semantics applied), with the schema and the session
/// state it was analyzed in.
pub(crate) fn analyzed(
    text: &str,
    schema: &Arc<Schema>,
) -> Result<(Expr, Arc<DFSchema>, datafusion::execution::SessionState)> {
    analyzed_in(text, schema, "UTC")
}

/// [`analyzed`] as a session in time zone `zone` would analyze it.
pub(crate) fn analyzed_in(
    text: &str,
    schema: &Arc<Schema>,
    zone: &str,
) -> Result<(Expr, Arc<DFSchema>, datafusion::execution::SessionState)> {
    // The plan is kept for later statements: `now()` in it reads the clock when it runs.
    let clock = crate::functions::TransactionStart::live();
    // The row's enum types, which a condition may cast to (`m <> 'sad'::mood`).
    let user = schema
        .fields()
        .iter()
        .filter_map(|f| sql::types::enum_type(f))
        .collect();
    let ctx = crate::dml::scratch_context_with(zone, Some(&clock), user);
    let state = ctx.state();
    let df_schema = Arc::new(DFSchema::try_from(schema.as_ref().clone())?);
    let expr = state
        .create_logical_expr(text, &df_schema)?
        .alias("__partita_condition");
    let plan = LogicalPlanBuilder::from(LogicalPlan::EmptyRelation(EmptyRelation {
        produce_one_row: false,
        schema: Arc::clone(&df_schema),
    }))
    .project([expr])?
    .build()?;
    let plan = state
        .analyzer()
        .execute_and_check(plan, state.config_options(), |_, _| {})?;
    let LogicalPlan::Projection(mut projection) = plan else {
        return Err(Error::Internal("condition plan".into()));
    };
    let expr = match projection.expr.remove(0) {
        Expr::Alias(a) => *a.expr,
        e => e,
    };
    Ok((expr, df_schema, state))
}

/// Checks `values` (a whole stored row of `def`) against the table's CHECK constraints.
pub(crate) fn verify(def: &TableDef, values: &[Value]) -> Result<()> {
    if def.checks.is_empty() {
        return Ok(());
    }
    if let Some(name) = failed(def, &def.checks, values)? {
        return Err(Error::CheckViolation {
            table: def.name.clone(),
            constraint: name,
            detail: failing_row(def, values),
        });
    }
    Ok(())
}

/// A row of `def` as PostgreSQL's constraint errors list it: "Failing row contains (1, null)."
pub(crate) fn failing_row(def: &TableDef, values: &[Value]) -> String {
    let row: Vec<String> = def
        .columns
        .iter()
        .zip(values)
        .filter(|(col, _)| !col.hidden)
        .map(|(_, value)| crate::text::value_text(value))
        .collect();
    format!("Failing row contains ({}).", row.join(", "))
}

/// Checks a stored row against `def`'s CHECK constraints from the `from`th on (those ALTER
/// TABLE adds): one it fails is 23514 naming the constraint.
pub(crate) fn verify_stored(def: &TableDef, from: usize, values: &[Value]) -> Result<()> {
    match failed(def, &def.checks[from..], values)? {
        Some(constraint) => Err(Error::CheckViolatedByRow {
            table: def.name.clone(),
            constraint,
        }),
        None => Ok(()),
    }
}

/// Plans `def`'s CHECK conditions, refusing one that does not plan (an unknown column is
/// 42703) or is not a boolean (42804).
pub(crate) fn validate(def: &TableDef) -> Result<()> {
    let schema = row_schema(def);
    for check in &def.checks {
        plan(&check.expr, &schema, true)?;
    }
    for column in &def.columns {
        if let Some(text) = &column.generated {
            // An index's expression may read generated columns: it is computed after them.
            if !column.hidden {
                validate_generation(def, text)?;
            }
            plan(&generation(text, column.ty), &schema, false)?;
        }
    }
    Ok(())
}

/// A generated column's expression as planned: cast to the column's type, as an
/// assignment casts.
fn generation(text: &str, ty: sql::SqlType) -> String {
    format!("CAST(({text}) AS {})", ty.to_ast())
}

/// Refuses a generation expression PostgreSQL refuses: one that reads a generated column
/// (42P17), calls a volatile function (42P17), holds a subquery (0A000) or an aggregate
/// (42803).
fn validate_generation(def: &TableDef, text: &str) -> Result<()> {
    let expr = crate::dml::parse_expr(text)?;
    let aggregates = crate::dml::scratch_context("UTC", None).state();
    let mut refused = None;
    let _ = datafusion::sql::sqlparser::ast::visit_expressions(&expr, |e| {
        use datafusion::sql::sqlparser::ast::Expr as E;
        refused = match e {
            E::Subquery(_) | E::Exists { .. } | E::InSubquery { .. } => Some(Error::NotSupported {
                message: "cannot use subquery in column generation expression".into(),
                detail: None,
            }),
            E::Function(f) => {
                let name = f.name.to_string().to_ascii_lowercase();
                let name = name.trim_start_matches("pg_catalog.");
                if crate::index::VOLATILE.contains(&name) {
                    Some(Error::InvalidObjectDefinition(
                        "generation expression is not immutable".into(),
                    ))
                } else if aggregates.aggregate_functions().contains_key(name) {
                    Some(Error::Grouping(
                        "aggregate functions are not allowed in column generation expressions"
                            .into(),
                    ))
                } else {
                    None
                }
            }
            E::Identifier(id) => def
                .columns
                .iter()
                .find(|c| c.generated.is_some() && c.name == sql::ddl::normalize_ident(id))
                .map(|c| {
                    Error::InvalidObjectDefinition(format!(
                        "cannot use generated column \"{}\" in column generation expression",
                        c.name
                    ))
                }),
            _ => None,
        };
        match refused {
            Some(_) => std::ops::ControlFlow::Break(()),
            None => std::ops::ControlFlow::Continue(()),
        }
    });
    refused.map_or(Ok(()), Err)
}

/// Gives each generated column of `def` its expression's value over `values` (a whole row
/// being written, its generated columns' old values ignored: no expression reads them),
/// then each index expression's (hidden generated columns, which may read the others).
pub(crate) fn generate(def: &TableDef, values: &mut [Value]) -> Result<()> {
    generate_where(def, values, &[false, true])
}

/// Gives each index expression of `def` (a hidden generated column) its value over
/// `values`, the row's own generated columns as they are.
pub(crate) fn generate_expressions(def: &TableDef, values: &mut [Value]) -> Result<()> {
    generate_where(def, values, &[true])
}

/// The generated columns of `def` whose `hidden` is each of `passes` in turn, computed over
/// `values` as the earlier passes left them.
fn generate_where(def: &TableDef, values: &mut [Value], passes: &[bool]) -> Result<()> {
    if def.columns.iter().all(|c| c.generated.is_none()) {
        return Ok(());
    }
    let schema = row_schema(def);
    for &hidden in passes {
        let mut columns = def
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.hidden == hidden && c.generated.is_some())
            .peekable();
        if columns.peek().is_none() {
            continue;
        }
        let batch = row_batch(def, &schema, values)?;
        for (i, column) in columns {
            if hidden && !crate::expression_index::needed(def, i, values)? {
                values[i] = Value::Null;
                continue;
            }
            let text = column.generated.as_deref().unwrap_or_default();
            let expr = condition(Kind::Generated, &generation(text, column.ty), &schema)?;
            let value = expr.evaluate(&batch)?.into_array(1)?;
            values[i] = crate::convert::value_from_array(&value, 0, column.ty, &column.name)?;
        }
    }
    Ok(())
}

/// The name of the first CHECK condition `values` makes false.
fn failed(def: &TableDef, checks: &[CheckDef], values: &[Value]) -> Result<Option<String>> {
    let schema = row_schema(def);
    let batch = row_batch(def, &schema, values)?;
    for check in checks {
        let condition = condition(Kind::Check, &check.expr, &schema)?;
        if holds(&condition, &batch)? == Some(false) {
            return Ok(Some(check.name.clone()));
        }
    }
    Ok(None)
}
