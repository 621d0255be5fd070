//! Correlated scalar subqueries DataFusion cannot decorrelate, evaluated per batch of outer
//! values.
//!
//! DataFusion turns a correlated scalar subquery into a join when the subquery aggregates and
//! its correlation is an equality. It refuses `(SELECT count(*) FROM t1 x WHERE x.b < t1.b)`
//! at physical planning and `(SELECT x.b FROM t2 x WHERE x.k = t1.k)`, which does not
//! aggregate, at analysis. A statement holding a correlated scalar subquery anywhere (select
//! list, WHERE, HAVING, ORDER BY, a derived table, a CTE, another subquery) is first planned as
//! written; when DataFusion's optimizer decorrelates every subquery, that plan runs, joins and
//! all. Otherwise each correlated scalar subquery is replaced by a call to a generated function
//! whose arguments are the outer columns it references, run on the statement's own snapshot.
//! A subquery that selects one aggregate row is run once per batch: its FROM joined with a
//! VALUES table of the batch's distinct argument sets, grouped by set; a set no row joins gets
//! the aggregate over no rows. Any other is run for each distinct set of argument values: it
//! is planned once per argument types, the outer values as placeholders, and each set of
//! values only substitutes them. PostgreSQL's rules hold: no row gives NULL, more than one
//! row is an error (21000).
//!
//! Only qualified outer references (`t1.b`) are recognised; a subquery referring to outer
//! columns unqualified is left to DataFusion.

use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::pg_catalog::call;
use crate::session::Session;
use datafusion::arrow::array::{ArrayRef, new_null_array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionContext;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{
    self, Expr, Ident, Query, SetExpr, Statement, TableFactor, VisitMut, Visitor, VisitorMut,
};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Names a FROM clause binds (aliases, else table names), lower-cased.
fn bound_names(from: &[ast::TableWithJoins]) -> HashSet<String> {
    let mut names = HashSet::new();
    let mut add = |factor: &TableFactor| match factor {
        TableFactor::Table { name, alias, .. } => {
            if let Some(a) = alias {
                names.insert(a.name.value.to_lowercase());
            } else if let Some(last) = name.0.last().and_then(|p| p.as_ident()) {
                names.insert(last.value.to_lowercase());
            }
        }
        TableFactor::Derived { alias: Some(a), .. }
        | TableFactor::TableFunction { alias: Some(a), .. } => {
            names.insert(a.name.value.to_lowercase());
        }
        _ => {}
    };
    for t in from {
        add(&t.relation);
        for j in &t.joins {
            add(&j.relation);
        }
    }
    names
}

/// Names the FROM clauses of `q` bind: its SELECT's, or every branch's of a set operation.
fn query_scope(q: &Query) -> HashSet<String> {
    fn collect(body: &SetExpr, names: &mut HashSet<String>) {
        match body {
            SetExpr::Select(s) => names.extend(bound_names(&s.from)),
            SetExpr::SetOperation { left, right, .. } => {
                collect(left, names);
                collect(right, names);
            }
            _ => {}
        }
    }
    let mut names = HashSet::new();
    collect(&q.body, &mut names);
    names
}

/// Qualified references in `q` to names bound by the outer query and not by `q` itself.
fn outer_references(q: &Query, outer: &HashSet<String>) -> Vec<Vec<Ident>> {
    struct Finder<'a> {
        inner: Vec<HashSet<String>>,
        outer: &'a HashSet<String>,
        found: Vec<Vec<Ident>>,
    }
    impl Visitor for Finder<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            self.inner.push(query_scope(q));
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
            self.inner.pop();
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            // `t.c`, or `schema.t.c` (`pg_catalog.pg_attribute.attnum`).
            if let Expr::CompoundIdentifier(parts) = e
                && (parts.len() == 2 || parts.len() == 3)
            {
                let q = parts[parts.len() - 2].value.to_lowercase();
                let shadowed = self.inner.iter().any(|s| s.contains(&q));
                if !shadowed && self.outer.contains(&q) && !self.found.contains(parts) {
                    self.found.push(parts.clone());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut f = Finder {
        inner: Vec::new(),
        outer,
        found: Vec::new(),
    };
    let _ = ast::Visit::visit(q, &mut f);
    f.found
}

/// `t.c[1]`, which parses as field accesses on `t`, as a subscript of the column `t.c`, so
/// that an outer reference subscripted (`c.confkey[1]`) is recognised as one.
pub(crate) fn qualified_subscripts(stmt: &mut Statement) {
    let _ = ast::visit_expressions_mut(stmt, |e| {
        // Every leading dot, as DataFusion reads them (`s.t.c[1]`, `t.c.f[1]`).
        while let Expr::CompoundFieldAccess { root, access_chain } = e
            && access_chain.len() > 1
            && let ast::AccessExpr::Dot(Expr::Identifier(next)) = &access_chain[0]
        {
            let mut parts = match root.as_ref() {
                Expr::Identifier(first) => vec![first.clone()],
                Expr::CompoundIdentifier(parts) => parts.clone(),
                _ => break,
            };
            parts.push(next.clone());
            **root = Expr::CompoundIdentifier(parts);
            access_chain.remove(0);
        }
        ControlFlow::<()>::Continue(())
    });
}

/// Replaces every outer reference in a copy of `q` by the matching expression.
fn bind_outer(q: &Query, refs: &[Vec<Ident>], values: &[Expr]) -> Query {
    struct Binder<'a> {
        refs: &'a [Vec<Ident>],
        values: &'a [Expr],
    }
    impl VisitorMut for Binder<'_> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::CompoundIdentifier(parts) = e
                && let Some(i) = self.refs.iter().position(|r| r == parts)
            {
                *e = Expr::Nested(Box::new(self.values[i].clone()));
            }
            ControlFlow::Continue(())
        }
    }
    let mut q = q.clone();
    let _ = q.visit(&mut Binder { refs, values });
    q
}

/// The SQL type an outer value of Arrow type `ty` is bound as.
fn sql_type(ty: &DataType) -> String {
    match ty {
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int8 | DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INTEGER".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Float32 => "REAL".into(),
        DataType::Float64 => "DOUBLE PRECISION".into(),
        DataType::Date32 => "DATE".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMPTZ".into(),
        DataType::Decimal128(p, s) => format!("NUMERIC({p},{s})"),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "BYTEA".into(),
        DataType::List(item) | DataType::LargeList(item) => {
            format!("{}[]", sql_type(item.data_type()))
        }
        _ => "TEXT".into(),
    }
}

fn cast_expr(text: &str, ty: &DataType) -> Expr {
    crate::dml::parse_expr(&format!("CAST({text} AS {})", sql_type(ty)))
        .unwrap_or(Expr::Value(ast::Value::Null.into()))
}

/// `value` as a typed SQL literal.
fn typed_literal(value: &ScalarValue, ty: &DataType) -> Expr {
    let text = if value.is_null() {
        "NULL".to_string()
    } else {
        format!("'{}'", value.to_string().replace('\'', "''"))
    };
    cast_expr(&text, ty)
}

/// The rewrites `Session::plan` applies before DataFusion sees a statement, minus those that
/// need the session.
pub(crate) fn prepare(stmt: &mut Statement) {
    crate::naming::name_function_columns(stmt);
    crate::params::cast_unknown_arguments(stmt);
    crate::numeric::rewrite_numeric_casts(stmt);
    crate::semantics::int4_result_constants(stmt);
    separate_set_comparisons(stmt);
}

/// DataFusion turns `x > ALL (SELECT …)` and `x = ANY (SELECT …)` into EXISTS subqueries
/// whose join then confuses the subquery's columns with the outer query's when both read a
/// table of the same name (`FROM emp WHERE salary > ALL (SELECT salary FROM emp …)` compares
/// each row with itself). Such a subquery, when it names nothing of the outer query, is read
/// through a derived table of its own name, `SELECT * FROM (…) AS __partita_set`.
fn separate_set_comparisons(stmt: &mut Statement) {
    struct Separate {
        scopes: Vec<HashSet<String>>,
    }
    impl VisitorMut for Separate {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            self.scopes.push(query_scope(q));
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
            self.scopes.pop();
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let (Expr::AnyOp { right, .. } | Expr::AllOp { right, .. }) = e else {
                return ControlFlow::Continue(());
            };
            let (Expr::Subquery(q), Some(outer)) = (right.as_mut(), self.scopes.last()) else {
                return ControlFlow::Continue(());
            };
            let shared = query_scope(q).iter().any(|name| outer.contains(name));
            if !shared || !outer_references(q, outer).is_empty() {
                return ControlFlow::Continue(());
            }
            let wrapper = crate::session::parse_sql("SELECT * FROM (SELECT 1) AS __partita_set");
            let Some(Statement::Query(mut wrapper)) = wrapper.ok().and_then(|mut s| s.pop()) else {
                return ControlFlow::Continue(());
            };
            if let SetExpr::Select(select) = wrapper.body.as_mut()
                && let Some(TableFactor::Derived { subquery, .. }) =
                    select.from.first_mut().map(|t| &mut t.relation)
            {
                std::mem::swap(subquery, q);
                *q = wrapper;
            }
            ControlFlow::Continue(())
        }
    }
    let _ = ast::VisitMut::visit(stmt, &mut Separate { scopes: Vec::new() });
}

/// Whether `plan`, once optimized, holds no correlated subquery and no outer reference:
/// DataFusion decorrelated them all and can run it.
fn decorrelated(state: &SessionState, plan: &LogicalPlan) -> bool {
    let Ok(optimized) = state.optimize(plan) else {
        return false;
    };
    let mut correlated = false;
    let _ = optimized.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                let subquery = match e {
                    datafusion::logical_expr::Expr::ScalarSubquery(s) => Some(s),
                    datafusion::logical_expr::Expr::Exists(x) => Some(&x.subquery),
                    datafusion::logical_expr::Expr::InSubquery(x) => Some(&x.subquery),
                    datafusion::logical_expr::Expr::SetComparison(x) => Some(&x.subquery),
                    _ => None,
                };
                // An outer reference left outside any subquery (an `unnest` over an outer
                // column the optimizer lifted into a join) does not run either.
                let outer = matches!(e, datafusion::logical_expr::Expr::OuterReferenceColumn(..));
                if outer
                    || subquery.is_some_and(|s| {
                        !s.outer_ref_columns.is_empty() || s.subquery.contains_outer_reference()
                    })
                {
                    correlated = true;
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(if correlated {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    !correlated
}

/// Runs `work` to completion on a helper thread with a runtime of its own: UDFs are called
/// synchronously from inside async code, where blocking on a future is not allowed.
fn run_blocking<T: Send>(
    work: impl Future<Output = datafusion::error::Result<T>> + Send,
) -> datafusion::error::Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| DataFusionError::Execution(e.to_string()))?
                    .block_on(work)
            })
            .join()
    })
    .map_err(|_| DataFusionError::Execution("subquery evaluation panicked".into()))?
}

/// The generated functions a statement's rewrite registered; dropped once the statement is
/// planned (its plan holds the functions themselves), it removes them from the registry.
pub(crate) struct SubqueryFunctions {
    ctx: SessionContext,
    names: Vec<String>,
    /// The statement's plan when finding that DataFusion decorrelates it already built it.
    pub(crate) plan: Option<LogicalPlan>,
}

impl Drop for SubqueryFunctions {
    fn drop(&mut self) {
        for name in &self.names {
            self.ctx.deregister_udf(name);
        }
    }
}

/// Visits every query of a statement, keeping the names each enclosing query's FROM binds,
/// and hands each correlated scalar subquery to `found`, which may return its replacement.
struct Correlated<F: FnMut(&Query, Vec<Vec<Ident>>) -> Option<Expr>> {
    scopes: Vec<HashSet<String>>,
    /// The WITH clause of each enclosing query: a subquery taken out of its statement keeps
    /// the common table expressions it can see.
    withs: Vec<Option<ast::With>>,
    /// The subqueries of `x op ANY/ALL (subquery)`, which are set comparisons, not scalar.
    set_comparisons: HashSet<*const Query>,
    found: F,
}

impl<F: FnMut(&Query, Vec<Vec<Ident>>) -> Option<Expr>> Correlated<F> {
    fn new(found: F) -> Self {
        Correlated {
            scopes: Vec::new(),
            withs: Vec::new(),
            set_comparisons: HashSet::new(),
            found,
        }
    }

    /// `q` with the common table expressions of its enclosing queries it does not shadow.
    fn with_visible_ctes(&self, q: &Query) -> Query {
        let mut q = q.clone();
        let mut ctes: Vec<ast::Cte> = q
            .with
            .as_ref()
            .map(|w| w.cte_tables.clone())
            .unwrap_or_default();
        let mut template = q.with.clone();
        for with in self.withs.iter().rev().flatten() {
            for cte in with.cte_tables.iter().rev() {
                if !ctes.iter().any(|c| {
                    c.alias
                        .name
                        .value
                        .eq_ignore_ascii_case(&cte.alias.name.value)
                }) {
                    ctes.insert(0, cte.clone());
                }
            }
            if template.is_none() {
                template = Some(with.clone());
            }
            if let Some(t) = template.as_mut() {
                t.recursive |= with.recursive;
            }
        }
        if let Some(mut with) = template {
            with.cte_tables = ctes;
            q.with = Some(with);
        }
        q
    }
}

impl<F: FnMut(&Query, Vec<Vec<Ident>>) -> Option<Expr>> VisitorMut for Correlated<F> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        self.scopes.push(query_scope(q));
        self.withs.push(q.with.clone());
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.scopes.pop();
        self.withs.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        match e {
            Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } => {
                if let Expr::Subquery(q) = right.as_ref() {
                    self.set_comparisons.insert(&**q as *const Query);
                }
            }
            Expr::Subquery(q) if !self.set_comparisons.contains(&(&**q as *const Query)) => {
                let refs = self
                    .scopes
                    .last()
                    .map(|scope| outer_references(q, scope))
                    .unwrap_or_default();
                if !refs.is_empty() {
                    let q = self.with_visible_ctes(q);
                    if let Some(call) = (self.found)(&q, refs) {
                        *e = call;
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

fn has_correlated_subquery(stmt: &Statement) -> bool {
    // Most statements hold no scalar subquery at all: found without copying the statement.
    struct AnySubquery;
    impl Visitor for AnySubquery {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Subquery(_) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    if ast::Visit::visit(stmt, &mut AnySubquery).is_continue() {
        return false;
    }
    let mut any = false;
    let mut finder = Correlated::new(|_: &Query, _| {
        any = true;
        None
    });
    let mut copy = stmt.clone();
    let _ = copy.visit(&mut finder);
    drop(finder);
    any
}

/// The expression a subquery selects when it is one SELECT of one expression with no
/// grouping, DISTINCT, window clause, ORDER BY or LIMIT.
fn single_selection(q: &Query) -> Option<&Expr> {
    if q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return None;
    }
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    let grouped = match &s.group_by {
        ast::GroupByExpr::All(_) => true,
        ast::GroupByExpr::Expressions(exprs, modifiers) => {
            !exprs.is_empty() || !modifiers.is_empty()
        }
    };
    if grouped
        || s.distinct.is_some()
        || s.having.is_some()
        || s.qualify.is_some()
        || !s.named_window.is_empty()
        || s.projection.len() != 1
    {
        return None;
    }
    let expr = match &s.projection[0] {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => e,
        _ => return None,
    };
    Some(expr)
}

/// The single expression a subquery selects when it is a plain filter: a
/// [`single_selection`] with no aggregate or window function.
fn plain_selection<'a>(q: &'a Query, is_aggregate: &dyn Fn(&str) -> bool) -> Option<&'a Expr> {
    let expr = single_selection(q)?;
    struct Aggregates<'a>(&'a dyn Fn(&str) -> bool);
    impl Visitor for Aggregates<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Function(f)
                    if f.over.is_some()
                        || f.name
                            .0
                            .last()
                            .and_then(|p| p.as_ident())
                            .is_some_and(|i| (self.0)(&i.value.to_lowercase())) =>
                {
                    ControlFlow::Break(())
                }
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    ast::Visit::visit(expr, &mut Aggregates(is_aggregate))
        .is_continue()
        .then_some(expr)
}

/// Whether a subquery is one aggregate row: a [`single_selection`] that calls an aggregate
/// function (not as a window) and holds no subquery. Such a subquery gives exactly one row
/// for any outer values.
fn aggregate_selection(q: &Query, is_aggregate: &dyn Fn(&str) -> bool) -> bool {
    let Some(expr) = single_selection(q) else {
        return false;
    };
    struct Calls<'a> {
        is_aggregate: &'a dyn Fn(&str) -> bool,
        aggregate: bool,
    }
    impl Visitor for Calls<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Function(f) if f.over.is_some() => return ControlFlow::Break(()),
                Expr::Function(f) => {
                    let name = f.name.0.last().and_then(|p| p.as_ident());
                    if name.is_some_and(|i| (self.is_aggregate)(&i.value.to_lowercase())) {
                        self.aggregate = true;
                    }
                }
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                    return ControlFlow::Break(());
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut calls = Calls {
        is_aggregate,
        aggregate: false,
    };
    ast::Visit::visit(expr, &mut calls).is_continue() && calls.aggregate
}

/// Rewrites each correlated subquery that selects a plain expression into one DataFusion can
/// decorrelate: `(SELECT e FROM … WHERE …)` becomes
/// `partita_single((SELECT named_struct('n', count(*), 'v', first_value(e)) FROM … WHERE …))`.
/// The aggregate subquery yields one row per correlation value, joined to the outer rows;
/// `partita_single` then gives NULL for no row, `e` for one and 21000 for more, only for the
/// outer rows that meet them, as PostgreSQL evaluates the subquery per outer row.
fn single_row_subqueries(stmt: &mut Statement, is_aggregate: &dyn Fn(&str) -> bool) -> bool {
    let mut changed = false;
    let mut rewriter = Correlated::new(|q: &Query, _| {
        let e = plain_selection(q, is_aggregate)?;
        let projection = crate::dml::parse_expr(&format!(
            "named_struct('n', count(*), 'v', first_value({e}))"
        ))
        .ok()?;
        let mut q = q.clone();
        if let SetExpr::Select(s) = q.body.as_mut() {
            s.projection = vec![ast::SelectItem::UnnamedExpr(projection)];
        }
        changed = true;
        Some(call(SINGLE_ROW, vec![Expr::Subquery(Box::new(q))]))
    });
    let _ = stmt.visit(&mut rewriter);
    drop(rewriter);
    changed
}

/// The function that unpacks a rewritten single-row subquery (see `single_row_subqueries`).
pub(crate) const SINGLE_ROW: &str = "partita_single";

/// `partita_single(s)`: `s.v` when `s.n` is 1, NULL when it is 0 or `s` is NULL, 21000 when
/// more than one row matched.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SingleRow {
    signature: Signature,
}

impl SingleRow {
    pub(crate) fn new() -> SingleRow {
        SingleRow {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for SingleRow {
    fn name(&self) -> &str {
        SINGLE_ROW
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        match arg_types.first() {
            Some(DataType::Struct(fields)) if fields.len() == 2 => {
                Ok(fields[1].data_type().clone())
            }
            other => Err(DataFusionError::Plan(format!(
                "{SINGLE_ROW} takes a struct of a count and a value, not {other:?}"
            ))),
        }
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::datatypes::Int64Type;
        let rows = args.number_rows;
        let packed = args.args[0].to_array(rows)?;
        let packed = packed.as_struct();
        let counts = datafusion::arrow::compute::cast(packed.column(0), &DataType::Int64)?;
        let counts = counts.as_primitive::<Int64Type>();
        let mut keep = Vec::with_capacity(rows);
        for r in 0..rows {
            let n = if packed.is_null(r) || counts.is_null(r) {
                0
            } else {
                counts.value(r)
            };
            if n > 1 {
                return Err(DataFusionError::External(Box::new(
                    Error::SubqueryTooManyRows,
                )));
            }
            keep.push(n == 1);
        }
        let values = packed.column(1);
        let keep = datafusion::arrow::array::BooleanArray::from(keep);
        let nulls = datafusion::arrow::array::new_null_array(values.data_type(), rows);
        Ok(ColumnarValue::Array(
            datafusion::arrow::compute::kernels::zip::zip(&keep, values, &nulls)?,
        ))
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Replaces every correlated scalar subquery of `stmt` by a call to a generated function
/// registered in `ctx`; returns the registered names.
fn replace_correlated(
    stmt: &mut Statement,
    ctx: &SessionContext,
    interrupt: &Interrupt,
) -> SubqueryFunctions {
    let state = ctx.state();
    let aggregates = state.aggregate_functions();
    let is_aggregate = |name: &str| aggregates.contains_key(name);
    let mut names = Vec::new();
    let mut replacer = Correlated::new(|q: &Query, refs: Vec<Vec<Ident>>| {
        let name = format!(
            "__partita_subquery_{}",
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        );
        let args = refs
            .iter()
            .map(|r| Expr::CompoundIdentifier(r.clone()))
            .collect();
        ctx.register_udf(ScalarUDF::new_from_impl(SubqueryFunction {
            name: name.clone(),
            signature: Signature::variadic_any(Volatility::Volatile),
            batchable: AtomicBool::new(aggregate_selection(q, &is_aggregate)),
            query: q.clone(),
            refs,
            ctx: ctx.clone(),
            interrupt: interrupt.clone(),
            prepared: Mutex::new(HashMap::new()),
        }));
        names.push(name.clone());
        Some(call(&name, args))
    });
    let _ = stmt.visit(&mut replacer);
    SubqueryFunctions {
        ctx: ctx.clone(),
        names,
        plan: None,
    }
}

/// A subquery planned for one list of argument types.
struct Prepared {
    return_type: DataType,
    /// The plan with the outer values as placeholders `$1`, `$2`…; `None` when the subquery
    /// holds correlated subqueries of its own that DataFusion cannot decorrelate, so that it
    /// is rewritten and planned again for each set of values.
    plan: Option<LogicalPlan>,
}

/// The generated function standing for one correlated subquery.
struct SubqueryFunction {
    name: String,
    signature: Signature,
    query: Query,
    refs: Vec<Vec<Ident>>,
    ctx: SessionContext,
    interrupt: Interrupt,
    prepared: Mutex<HashMap<Vec<DataType>, Arc<Prepared>>>,
    /// Whether the subquery is one aggregate row, evaluated for a batch's outer values at
    /// once (see [`SubqueryFunction::evaluate_batch`]); cleared when DataFusion cannot plan
    /// that form.
    batchable: AtomicBool,
}

impl std::fmt::Debug for SubqueryFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl PartialEq for SubqueryFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for SubqueryFunction {}

impl Hash for SubqueryFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl SubqueryFunction {
    /// The subquery with its outer references replaced by `values`, prepared for planning.
    fn bound(&self, values: &[Expr]) -> Statement {
        let mut stmt = Statement::Query(Box::new(bind_outer(&self.query, &self.refs, values)));
        prepare(&mut stmt);
        stmt
    }

    fn prepared(&self, types: &[DataType]) -> datafusion::error::Result<Arc<Prepared>> {
        let mut cache = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = cache.get(types) {
            return Ok(Arc::clone(p));
        }
        let placeholders: Vec<Expr> = types
            .iter()
            .enumerate()
            .map(|(i, ty)| cast_expr(&format!("${}", i + 1), ty))
            .collect();
        let stmt = self.bound(&placeholders);
        let state = self.ctx.state();
        let plan = run_blocking(async {
            state
                .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                    stmt,
                )))
                .await
        })?;
        let fields = plan.schema().fields();
        if fields.len() != 1 {
            return Err(DataFusionError::External(Box::new(Error::Syntax(
                "subquery must return only one column".into(),
            ))));
        }
        let return_type = fields[0].data_type().clone();
        let keep = decorrelated(&state, &plan);
        let prepared = Arc::new(Prepared {
            return_type,
            plan: keep.then_some(plan),
        });
        cache.insert(types.to_vec(), Arc::clone(&prepared));
        Ok(prepared)
    }

    /// The subquery as one join of its FROM with a table of outer value sets, grouped by
    /// set: `SELECT __v.__i, <expr> FROM <from>, (VALUES (0, …), …) AS __v(__i, __p0, …)
    /// WHERE <where, outer references as __v.__pK> GROUP BY __v.__i, __v.__p0, …`. Only for
    /// a subquery that is one aggregate row: a set no row joins is missing from the result
    /// and is evaluated on its own, as its aggregate over no rows.
    fn batched_statement(
        &self,
        types: &[DataType],
        sets: &[Vec<ScalarValue>],
    ) -> Option<Statement> {
        // A list has no literal form here to put in the VALUES table.
        if types
            .iter()
            .any(|t| matches!(t, DataType::List(_) | DataType::LargeList(_)))
        {
            return None;
        }
        let params: Vec<String> = (0..types.len()).map(|k| format!("__p{k}")).collect();
        let param =
            |name: &str| Expr::CompoundIdentifier(vec![Ident::new("__v"), Ident::new(name)]);
        let values: Vec<Expr> = params.iter().map(|p| param(p)).collect();
        let mut query = bind_outer(&self.query, &self.refs, &values);
        let mut skeleton = crate::session::parse_sql(&format!(
            "SELECT 1 FROM (VALUES (0)) AS __v(__i, {})",
            params.join(", ")
        ))
        .ok()?
        .pop()?;
        let Statement::Query(skeleton_query) = &mut skeleton else {
            return None;
        };
        let SetExpr::Select(skeleton_select) = skeleton_query.body.as_mut() else {
            return None;
        };
        let mut from = skeleton_select.from.pop()?;
        let TableFactor::Derived { subquery, .. } = &mut from.relation else {
            return None;
        };
        let SetExpr::Values(table) = subquery.body.as_mut() else {
            return None;
        };
        // A typed NULL per parameter, whose value each row replaces.
        let templates: Vec<Expr> = types.iter().map(|t| cast_expr("NULL", t)).collect();
        table.rows = sets
            .iter()
            .enumerate()
            .map(|(i, set)| {
                let mut row = vec![Expr::value(ast::Value::Number(i.to_string(), false))];
                for (value, template) in set.iter().zip(&templates) {
                    let mut cell = template.clone();
                    if !value.is_null()
                        && let Expr::Cast { expr, .. } = &mut cell
                    {
                        **expr = Expr::value(ast::Value::SingleQuotedString(value.to_string()));
                    }
                    row.push(cell);
                }
                ast::Parens::with_empty_span(row)
            })
            .collect();
        let SetExpr::Select(select) = query.body.as_mut() else {
            return None;
        };
        select.from.push(from);
        select
            .projection
            .insert(0, ast::SelectItem::UnnamedExpr(param("__i")));
        let mut grouping = vec![param("__i")];
        grouping.extend(values);
        select.group_by = ast::GroupByExpr::Expressions(grouping, vec![]);
        let mut stmt = Statement::Query(Box::new(query));
        prepare(&mut stmt);
        Some(stmt)
    }

    /// Runs the subquery for every set of outer values at once (see
    /// [`batched_statement`](Self::batched_statement)); `None` when DataFusion cannot plan or
    /// run that form, after which this function evaluates set by set.
    async fn evaluate_batch(
        &self,
        prepared: &Prepared,
        types: &[DataType],
        sets: &[Vec<ScalarValue>],
    ) -> datafusion::error::Result<Option<Vec<ScalarValue>>> {
        let Some(stmt) = self.batched_statement(types, sets) else {
            self.batchable.store(false, Ordering::Relaxed);
            return Ok(None);
        };
        let state = self.ctx.state();
        let plan = match state
            .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                stmt,
            )))
            .await
        {
            Ok(plan) => plan,
            Err(_) => {
                self.batchable.store(false, Ordering::Relaxed);
                return Ok(None);
            }
        };
        // An error while running (a division by zero in the aggregate, say) is left to the
        // evaluation set by set, which raises it for the set that meets it.
        // A form DataFusion plans but cannot run (a FROM function over an outer value, which
        // the batch makes a lateral reference to the VALUES table) is never tried again.
        let Ok(stream) = self.ctx.execute_logical_plan(plan).await else {
            self.batchable.store(false, Ordering::Relaxed);
            return Ok(None);
        };
        let Ok(batches) = stream.collect().await else {
            return Ok(None);
        };
        let mut results: Vec<Option<ScalarValue>> = vec![None; sets.len()];
        for batch in &batches {
            let sets_column = batch.column(0);
            for r in 0..batch.num_rows() {
                // The row number, an integer constant of the VALUES list.
                let i = match ScalarValue::try_from_array(sets_column, r)? {
                    ScalarValue::Int64(Some(i)) => i,
                    ScalarValue::Int32(Some(i)) => i64::from(i),
                    _ => return Ok(None),
                };
                let value = ScalarValue::try_from_array(batch.column(1), r)?;
                if let Some(slot) = usize::try_from(i).ok().and_then(|i| results.get_mut(i)) {
                    *slot = Some(value.cast_to(&prepared.return_type)?);
                }
            }
        }
        let mut out = Vec::with_capacity(sets.len());
        for (result, set) in results.into_iter().zip(sets) {
            out.push(match result {
                Some(v) => v,
                None => {
                    self.interrupt.check()?;
                    self.evaluate(prepared, types, set).await?
                }
            });
        }
        Ok(Some(out))
    }

    /// Runs the subquery for one set of outer values.
    async fn evaluate(
        &self,
        prepared: &Prepared,
        types: &[DataType],
        values: &[ScalarValue],
    ) -> datafusion::error::Result<ScalarValue> {
        let (plan, _functions) = match &prepared.plan {
            Some(plan) => (
                plan.clone().with_param_values(ParamValues::List(
                    values.iter().cloned().map(Into::into).collect(),
                ))?,
                None,
            ),
            None => {
                let literals: Vec<Expr> = values
                    .iter()
                    .zip(types)
                    .map(|(v, t)| typed_literal(v, t))
                    .collect();
                let mut stmt = self.bound(&literals);
                let functions = replace_correlated(&mut stmt, &self.ctx, &self.interrupt);
                let plan = self
                    .ctx
                    .state()
                    .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                        stmt,
                    )))
                    .await?;
                (plan, Some(functions))
            }
        };
        let batches = self.ctx.execute_logical_plan(plan).await?.collect().await?;
        let mut found: Option<ScalarValue> = None;
        for batch in batches {
            for r in 0..batch.num_rows() {
                if found.is_some() {
                    return Err(DataFusionError::External(Box::new(
                        Error::SubqueryTooManyRows,
                    )));
                }
                found = Some(ScalarValue::try_from_array(batch.column(0), r)?);
            }
        }
        match found {
            Some(v) => v.cast_to(&prepared.return_type),
            None => ScalarValue::try_from(&prepared.return_type),
        }
    }
}

impl ScalarUDFImpl for SubqueryFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(self.prepared(arg_types)?.return_type.clone())
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<datafusion::error::Result<_>>()?;
        let types: Vec<DataType> = arrays.iter().map(|a| a.data_type().clone()).collect();
        let prepared = self.prepared(&types)?;
        // Each row's argument values, and the distinct ones in order of appearance.
        let mut keys = Vec::with_capacity(rows);
        let mut slots: HashMap<Vec<ScalarValue>, usize> = HashMap::new();
        let mut distinct: Vec<Vec<ScalarValue>> = Vec::new();
        for r in 0..rows {
            let key: Vec<ScalarValue> = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, r))
                .collect::<datafusion::error::Result<_>>()?;
            let slot = *slots.entry(key).or_insert_with_key(|key| {
                distinct.push(key.clone());
                distinct.len() - 1
            });
            keys.push(slot);
        }
        let results = run_blocking(async {
            if distinct.len() > 1
                && prepared.plan.is_some()
                && self.batchable.load(Ordering::Relaxed)
                && let Some(results) = self.evaluate_batch(&prepared, &types, &distinct).await?
            {
                return Ok(results);
            }
            let mut results = Vec::with_capacity(distinct.len());
            for values in &distinct {
                self.interrupt.check()?;
                results.push(self.evaluate(&prepared, &types, values).await?);
            }
            Ok(results)
        })?;
        if rows == 0 {
            return Ok(ColumnarValue::Array(new_null_array(
                &prepared.return_type,
                0,
            )));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(
            keys.into_iter().map(|slot| results[slot].clone()),
        )?))
    }
}

impl Session {
    /// Replaces the statement's correlated scalar subqueries that DataFusion cannot
    /// decorrelate by calls of generated functions (see the module comment). Keep the result
    /// until the statement is planned.
    pub(crate) async fn rewrite_correlated_subqueries(
        &self,
        stmt: &mut Statement,
    ) -> Result<SubqueryFunctions> {
        let mut none = SubqueryFunctions {
            ctx: self.ctx.clone(),
            names: Vec::new(),
            plan: None,
        };
        if !matches!(stmt, Statement::Query(_)) {
            return Ok(none);
        }
        // Whole rows of outer FROM items, which a subquery planned on its own would not
        // know, are written out first.
        crate::rows::expand_whole_rows(stmt, &|name| self.row_columns(name))?;
        qualified_subscripts(stmt);
        if !has_correlated_subquery(stmt) {
            return Ok(none);
        }
        if let Some(plan) = self.decorrelated_plan(stmt).await {
            none.plan = Some(plan);
            return Ok(none);
        }
        let state = self.ctx.state();
        let aggregates = state.aggregate_functions();
        let is_aggregate = |name: &str| aggregates.contains_key(name);
        let mut single = stmt.clone();
        if single_row_subqueries(&mut single, &is_aggregate)
            && let Some(plan) = self.decorrelated_plan(&single).await
        {
            *stmt = single;
            none.plan = Some(plan);
            return Ok(none);
        }
        Ok(replace_correlated(stmt, &self.ctx, &self.interrupt))
    }

    /// `stmt`'s plan, when DataFusion plans it with every subquery decorrelated.
    async fn decorrelated_plan(&self, stmt: &Statement) -> Option<LogicalPlan> {
        let plan = self.plan(stmt.clone()).await.ok()?;
        decorrelated(&self.ctx.state(), &plan).then_some(plan)
    }
}
