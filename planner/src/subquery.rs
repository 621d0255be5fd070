//! Correlated scalar subqueries DataFusion cannot decorrelate, evaluated row by row.
//!
//! DataFusion turns a correlated scalar subquery into a join only when the correlation is an
//! equality; `(SELECT count(*) FROM t1 x WHERE x.b < t1.b)` is refused at physical planning.
//! Before planning, such a subquery of a top-level SELECT is replaced by a call to a generated
//! function whose arguments are the outer columns it references; the function runs the
//! subquery with those values bound, once per distinct set of values in a batch, on the
//! statement's own snapshot. PostgreSQL's rules hold: no row gives NULL, more than one row is
//! an error (21000).
//!
//! Only subqueries whose outer references are qualified (`t1.b`) are rewritten; the others
//! are left to DataFusion.

use crate::error::{Error, Result};
use crate::session::Session;
use datafusion::arrow::array::{ArrayRef, new_null_array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, Query, SetExpr, Statement, TableFactor, VisitMut, Visitor, VisitorMut,
};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

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
            if let SetExpr::Select(s) = q.body.as_ref() {
                self.inner.push(bound_names(&s.from));
            } else {
                self.inner.push(HashSet::new());
            }
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

fn typed_literal(value: &ScalarValue, ty: &DataType) -> Expr {
    let sql_ty = match ty {
        DataType::Boolean => "BOOLEAN",
        DataType::Int8 | DataType::Int16 => "SMALLINT",
        DataType::Int32 => "INTEGER",
        DataType::Int64 => "BIGINT",
        DataType::Float32 => "REAL",
        DataType::Float64 => "DOUBLE PRECISION",
        DataType::Date32 => "DATE",
        DataType::Timestamp(_, None) => "TIMESTAMP",
        DataType::Timestamp(_, Some(_)) => "TIMESTAMPTZ",
        DataType::Decimal128(p, s) => return cast_text(value, &format!("NUMERIC({p},{s})")),
        _ => "TEXT",
    };
    cast_text(value, sql_ty)
}

fn cast_text(value: &ScalarValue, sql_ty: &str) -> Expr {
    let text = if value.is_null() {
        "NULL".to_string()
    } else {
        format!("'{}'", value.to_string().replace('\'', "''"))
    };
    crate::dml::parse_expr(&format!("CAST({text} AS {sql_ty})"))
        .unwrap_or(Expr::Value(ast::Value::Null.into()))
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The generated function standing for one correlated subquery.
struct SubqueryFunction {
    name: String,
    signature: Signature,
    query: Query,
    refs: Vec<Vec<Ident>>,
    arg_types: Vec<DataType>,
    return_type: DataType,
    ctx: SessionContext,
    interrupt: crate::interrupt::Interrupt,
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
    /// Runs the subquery for one set of outer values, on a helper thread: UDFs are called
    /// synchronously from inside the async executor.
    fn evaluate(&self, values: &[ScalarValue]) -> datafusion::error::Result<ScalarValue> {
        let bound: Vec<Expr> = values
            .iter()
            .zip(&self.arg_types)
            .map(|(v, t)| typed_literal(v, t))
            .collect();
        let query = bind_outer(&self.query, &self.refs, &bound);
        let ctx = self.ctx.clone();
        let return_type = self.return_type.clone();
        let result = std::thread::scope(|scope| {
            scope
                .spawn(move || -> datafusion::error::Result<ScalarValue> {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| DataFusionError::Execution(e.to_string()))?;
                    runtime.block_on(async move {
                        let plan = ctx
                            .state()
                            .statement_to_plan(datafusion::sql::parser::Statement::Statement(
                                Box::new(Statement::Query(Box::new(query))),
                            ))
                            .await?;
                        let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
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
                            Some(v) => v.cast_to(&return_type),
                            None => ScalarValue::try_from(&return_type),
                        }
                    })
                })
                .join()
        });
        result.map_err(|_| DataFusionError::Execution("subquery evaluation panicked".into()))?
    }
}

impl ScalarUDFImpl for SubqueryFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(self.return_type.clone())
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
        if arrays.is_empty() {
            return Ok(ColumnarValue::Scalar(self.evaluate(&[])?));
        }
        let mut cache: HashMap<Vec<ScalarValue>, ScalarValue> = HashMap::new();
        let mut out = Vec::with_capacity(rows);
        for r in 0..rows {
            self.interrupt.check()?;
            let key: Vec<ScalarValue> = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, r))
                .collect::<datafusion::error::Result<_>>()?;
            let value = match cache.get(&key) {
                Some(v) => v.clone(),
                None => {
                    let v = self.evaluate(&key)?;
                    cache.insert(key, v.clone());
                    v
                }
            };
            out.push(value);
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(new_null_array(&self.return_type, 0)));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

impl Session {
    /// Rewrites correlated scalar subqueries of the statement's top-level SELECT into calls
    /// of generated functions (see the module comment).
    pub(crate) async fn rewrite_correlated_subqueries(&self, stmt: &mut Statement) -> Result<()> {
        let Statement::Query(query) = stmt else {
            return Ok(());
        };
        let SetExpr::Select(select) = query.body.as_mut() else {
            return Ok(());
        };
        let outer = bound_names(&select.from);
        if outer.is_empty() {
            return Ok(());
        }
        // Collect the candidates first.
        struct Collector<'a> {
            outer: &'a HashSet<String>,
            found: Vec<(Query, Vec<Vec<Ident>>)>,
        }
        impl Visitor for Collector<'_> {
            type Break = ();
            fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                if let Expr::Subquery(q) = e {
                    let refs = outer_references(q, self.outer);
                    if !refs.is_empty() && !self.found.iter().any(|(fq, _)| fq == q.as_ref()) {
                        self.found.push(((**q).clone(), refs));
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let mut collector = Collector {
            outer: &outer,
            found: Vec::new(),
        };
        for item in &select.projection {
            let _ = ast::Visit::visit(item, &mut collector);
        }
        if let Some(w) = &select.selection {
            let _ = ast::Visit::visit(w, &mut collector);
        }
        if collector.found.is_empty() {
            return Ok(());
        }
        let found = collector.found;

        // Types of the outer references: plan SELECT <refs> FROM <outer FROM> LIMIT 0.
        let mut replacements: Vec<(Query, Expr)> = Vec::new();
        for (q, refs) in found {
            let probe = format!(
                "SELECT {} FROM {} LIMIT 0",
                refs.iter()
                    .map(|r| r
                        .iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join("."))
                    .collect::<Vec<_>>()
                    .join(", "),
                select
                    .from
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let probe_stmt = crate::session::parse_sql(&probe)?.remove(0);
            let plan = self.plan(probe_stmt).await?;
            let arg_types: Vec<DataType> = plan
                .schema()
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect();
            // The result type: the subquery with typed NULLs for the outer values.
            let nulls: Vec<Expr> = arg_types
                .iter()
                .map(|t| typed_literal(&ScalarValue::Null, t))
                .collect();
            let typed = bind_outer(&q, &refs, &nulls);
            let plan = self.plan(Statement::Query(Box::new(typed))).await?;
            let Some(field) = plan.schema().fields().first() else {
                return Err(Error::Syntax("subquery must return only one column".into()));
            };
            if plan.schema().fields().len() != 1 {
                return Err(Error::Syntax("subquery must return only one column".into()));
            }
            let name = format!(
                "__partita_subquery_{}",
                NEXT_ID.fetch_add(1, Ordering::Relaxed)
            );
            let udf = SubqueryFunction {
                name: name.clone(),
                signature: Signature::exact(arg_types.clone(), Volatility::Volatile),
                query: q.clone(),
                refs: refs.clone(),
                arg_types,
                return_type: field.data_type().clone(),
                ctx: self.ctx.clone(),
                interrupt: self.interrupt.clone(),
            };
            self.ctx.register_udf(ScalarUDF::new_from_impl(udf));
            let call = Expr::Function(ast::Function {
                name: ObjectName::from(vec![Ident::new(name)]),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::List(FunctionArgumentList {
                    duplicate_treatment: None,
                    args: refs
                        .iter()
                        .map(|r| {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::CompoundIdentifier(
                                r.clone(),
                            )))
                        })
                        .collect(),
                    clauses: vec![],
                }),
                filter: None,
                null_treatment: None,
                over: None,
                within_group: vec![],
            });
            replacements.push((q, call));
        }

        struct Replacer<'a> {
            replacements: &'a [(Query, Expr)],
        }
        impl VisitorMut for Replacer<'_> {
            type Break = ();
            fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
                if let Expr::Subquery(q) = e
                    && let Some((_, call)) =
                        self.replacements.iter().find(|(fq, _)| fq == q.as_ref())
                {
                    *e = call.clone();
                }
                ControlFlow::Continue(())
            }
        }
        let mut replacer = Replacer {
            replacements: &replacements,
        };
        for item in select.projection.iter_mut() {
            let _ = item.visit(&mut replacer);
        }
        if let Some(w) = select.selection.as_mut() {
            let _ = w.visit(&mut replacer);
        }
        Ok(())
    }
}
