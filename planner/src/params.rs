//! Parameter types from a placeholder's context, where DataFusion's own inference (a
//! placeholder compared with a column, inserted into one, …) leaves them open.
//!
//! A client that sends a parameter without a type learns the one the server chose from
//! ParameterDescription and encodes its value so; asyncpg encodes `5` for an `int4` and
//! refuses it for a `text`. So `$1::int` must be described as `int4`, `WHERE $1` as `bool`
//! and `coalesce($1, 5)` as the other argument's type, as PostgreSQL resolves them.

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::{
    BinaryExpr, Case, Cast, Expr, ExprSchemable, LogicalPlan, Operator, TryCast, TypeSignature,
};
use std::sync::Arc;

/// A placeholder's name (`$1`), the Arrow type its context gives it, and the declared SQL
/// type for the types Partita keeps as text (uuid, json, varchar(n)).
pub type ContextType = (String, DataType, Option<sql::SqlType>);

/// Parameter types from context:
/// - `$n` in `x = ANY($n)` is an array of `x`'s type;
/// - `$n::t` is a `t` (`$n::int[]` an `int[]`, `$n::jsonb` a jsonb);
/// - `f($n)` is the one type `f` takes there (`pg_advisory_lock($1)`: a bigint), or `float8`
///   when `f` takes any number (`abs($1)`), PostgreSQL's preferred numeric type;
/// - `coalesce`, `nullif`, `greatest`, `least` and CASE results: the other arguments' type;
/// - a condition (`WHERE $1`, `$1 AND x`, `NOT $1`, `CASE WHEN $1`): a bool;
/// - `LIMIT $1` / `OFFSET $2`: a bigint.
pub fn contextual_parameter_types(plan: &LogicalPlan) -> Vec<ContextType> {
    let mut found = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        let schema = crate::semantics::input_schema(node);
        let condition = match node {
            LogicalPlan::Filter(f) => Some(&f.predicate),
            LogicalPlan::Join(j) => j.filter.as_ref(),
            _ => None,
        };
        if let Some(Expr::Placeholder(p)) = condition {
            found.push((p.id.clone(), DataType::Boolean, None));
        }
        if let LogicalPlan::Limit(limit) = node {
            for count in [&limit.skip, &limit.fetch].into_iter().flatten() {
                if let Expr::Placeholder(p) = count.as_ref() {
                    found.push((p.id.clone(), DataType::Int64, None));
                }
            }
        }
        node.apply_expressions(|e| {
            e.apply(|e| {
                let mut typed = |arg: &Expr, ty: DataType| {
                    if let Expr::Placeholder(p) = arg {
                        found.push((p.id.clone(), ty, None));
                    }
                };
                match e {
                    Expr::ScalarFunction(f) if f.name() == "partita_array_like" => {
                        if let [left, right] = f.args.as_slice()
                            && let Ok(t) = left.get_type(&schema)
                        {
                            let element = crate::arrays::element_like(&t).clone();
                            typed(
                                right,
                                DataType::List(Arc::new(Field::new("item", element, true))),
                            );
                        }
                    }
                    Expr::ScalarFunction(f)
                        if matches!(f.name(), "coalesce" | "nullif" | "greatest" | "least") =>
                    {
                        if let Some(t) = first_type(f.args.iter(), &schema) {
                            f.args.iter().for_each(|arg| typed(arg, t.clone()));
                        }
                    }
                    // `$1::numeric`, which `numeric::rewrite_numeric_casts` made `numeric($1)`.
                    Expr::ScalarFunction(f) if f.name() == "numeric" => {
                        let unconstrained = sql::SqlType::Numeric {
                            precision: None,
                            scale: None,
                        };
                        f.args
                            .iter()
                            .for_each(|arg| typed(arg, unconstrained.arrow()));
                    }
                    Expr::ScalarFunction(f) => {
                        let signature = &f.func.signature().type_signature;
                        for (i, arg) in f.args.iter().enumerate() {
                            if let Some(t) = only_type(signature, f.args.len(), i) {
                                typed(arg, t);
                            }
                        }
                    }
                    Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
                        if let Expr::Placeholder(p) = expr.as_ref() {
                            let declared = crate::casts::declared(field);
                            found.push((p.id.clone(), field.data_type().clone(), declared));
                        }
                    }
                    // Compared with a column of a type Partita keeps as text (uuid, json,
                    // jsonb): that type, which the value is read as.
                    Expr::BinaryExpr(BinaryExpr { left, op, right })
                        if crate::semantics::is_comparison(op) =>
                    {
                        for (placeholder, other) in [(left, right), (right, left)] {
                            declared_like(placeholder, other, &schema, &mut found);
                        }
                    }
                    Expr::InList(list) => {
                        for item in &list.list {
                            declared_like(item, &list.expr, &schema, &mut found);
                        }
                    }
                    Expr::Between(between) => {
                        for bound in [&between.low, &between.high] {
                            declared_like(bound, &between.expr, &schema, &mut found);
                        }
                    }
                    Expr::BinaryExpr(BinaryExpr {
                        left,
                        op: Operator::And | Operator::Or,
                        right,
                    }) => {
                        typed(left, DataType::Boolean);
                        typed(right, DataType::Boolean);
                    }
                    Expr::Not(inner)
                    | Expr::IsTrue(inner)
                    | Expr::IsFalse(inner)
                    | Expr::IsNotTrue(inner)
                    | Expr::IsNotFalse(inner) => typed(inner, DataType::Boolean),
                    Expr::Case(Case {
                        expr,
                        when_then_expr,
                        else_expr,
                    }) => {
                        let tested = match expr {
                            Some(base) => first_type(
                                std::iter::once(base.as_ref())
                                    .chain(when_then_expr.iter().map(|(w, _)| w.as_ref())),
                                &schema,
                            ),
                            None => Some(DataType::Boolean),
                        };
                        if let Some(t) = tested {
                            when_then_expr.iter().for_each(|(w, _)| typed(w, t.clone()));
                        }
                        let results = when_then_expr
                            .iter()
                            .map(|(_, then)| then.as_ref())
                            .chain(else_expr.as_deref());
                        if let Some(t) = first_type(results.clone(), &schema) {
                            results.for_each(|r| typed(r, t.clone()));
                        }
                    }
                    _ => {}
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    found
}

/// `placeholder`, when it is one, compared with `other` of type uuid, json or jsonb: of
/// that type.
fn declared_like(
    placeholder: &Expr,
    other: &Expr,
    schema: &datafusion::common::DFSchema,
    found: &mut Vec<ContextType>,
) {
    let Expr::Placeholder(p) = placeholder else {
        return;
    };
    if let Ok((_, field)) = other.to_field(schema)
        && let Some(declared @ (sql::SqlType::Uuid | sql::SqlType::Json | sql::SqlType::Jsonb)) =
            crate::casts::declared(&field)
    {
        found.push((p.id.clone(), field.data_type().clone(), Some(declared)));
    }
}

/// The type of the first of `exprs` that is not a placeholder or a NULL.
fn first_type<'a>(
    mut exprs: impl Iterator<Item = &'a Expr>,
    schema: &datafusion::common::DFSchema,
) -> Option<DataType> {
    exprs.find_map(|e| match e {
        Expr::Placeholder(_) => None,
        e => e.get_type(schema).ok().filter(|t| !t.is_null()),
    })
}

/// The one type a function of `signature` takes as argument `at` of `arity`, when there is
/// one; `float8` when it takes any numeric type there.
pub(crate) fn only_type(signature: &TypeSignature, arity: usize, at: usize) -> Option<DataType> {
    use TypeSignature as S;
    match signature {
        S::Uniform(n, types) if *n == arity && types.len() == 1 => Some(types[0].clone()),
        S::Uniform(n, types)
            if *n == arity
                && types.contains(&DataType::Float64)
                && types.iter().all(DataType::is_numeric) =>
        {
            Some(DataType::Float64)
        }
        S::Numeric(n) if *n == arity => Some(DataType::Float64),
        S::Exact(types) if types.len() == arity => types.get(at).cloned(),
        S::OneOf(signatures) => {
            let mut candidates = signatures
                .iter()
                .filter(|s| match s {
                    S::Uniform(n, _) | S::Numeric(n) => *n == arity,
                    S::Exact(types) => types.len() == arity,
                    _ => true,
                })
                .map(|s| only_type(s, arity, at));
            let first = candidates.next()??;
            candidates
                .all(|t| t.as_ref() == Some(&first))
                .then_some(first)
        }
        _ => None,
    }
}
