//! Parameter types from a placeholder's context, where DataFusion's own inference (a
//! placeholder compared with a column, inserted into one, …) leaves them open.
//!
//! A client that sends a parameter without a type learns the one the server chose from
//! ParameterDescription and encodes its value so; asyncpg encodes `5` for an `int4` and
//! refuses it for a `text`. So `$1::int` must be described as `int4`, `WHERE $1` as `bool`
//! and `coalesce($1, 5)` as the other argument's type, as PostgreSQL resolves them.

use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit};
use datafusion::common::DFSchema;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    BinaryExpr, Case, Cast, Expr, ExprSchemable, LogicalPlan, Operator, TryCast, TypeSignature,
};
use datafusion::sql::sqlparser::ast;
use std::sync::Arc;

/// A placeholder's name (`$1`), the Arrow type its context gives it, and the declared SQL
/// type for the types Partita keeps as text (uuid, json, varchar(n)).
pub type ContextType = (String, DataType, Option<sql::SqlType>);

/// Parameter types from context:
/// - `$n` in `x = ANY($n)` is an array of `x`'s type, beside an array in `@>`, `<@`, `&&`
///   and `||` the other's array type;
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
                    // An element beside an array (`$1 = ANY(array[1, 2])`, `array_append(a,
                    // $1)`) is of the array's element type; an array beside one, of its type.
                    Expr::ScalarFunction(f)
                        if matches!(
                            f.name(),
                            "array_concat" | "array_has_any" | "array_has_all"
                        ) =>
                    {
                        for (i, arg) in f.args.iter().enumerate() {
                            let mut others = f.args.iter().enumerate().filter(|(j, _)| *j != i);
                            if let Some((_, array)) = others.next_back() {
                                array_like(arg, array, &schema, &mut found);
                            }
                        }
                    }
                    Expr::ScalarFunction(f) if array_operand(f.name()).is_some() => {
                        let (array, other) = array_operand(f.name()).unwrap_or_default();
                        if let (Some(array), Some(placeholder)) =
                            (f.args.get(array), f.args.get(other))
                            && let Ok(DataType::List(element)) = array.get_type(&schema)
                        {
                            typed(
                                placeholder,
                                crate::arrays::element_like(element.data_type()).clone(),
                            );
                        }
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
                        let bounds = [between.low.as_ref(), between.high.as_ref()];
                        if let Some(t) = first_type(bounds.into_iter(), &schema) {
                            typed(&between.expr, t);
                        }
                        for bound in [&between.low, &between.high] {
                            declared_like(bound, &between.expr, &schema, &mut found);
                        }
                    }
                    Expr::BinaryExpr(BinaryExpr {
                        left,
                        op: Operator::AtArrow | Operator::ArrowAt,
                        right,
                    }) => {
                        array_like(left, right, &schema, &mut found);
                        array_like(right, left, &schema, &mut found);
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

/// The types DataFusion gave the plan's placeholders: the first one each has where it has
/// several (`name = $1 OR code = $1` of a text and a varchar(20) column, which DataFusion's
/// own listing refuses as conflicting).
pub fn parameter_types(plan: &LogicalPlan) -> std::collections::HashMap<String, Option<DataType>> {
    let mut types: std::collections::HashMap<String, Option<DataType>> = Default::default();
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::Placeholder(p) = e {
                    let slot = types.entry(p.id.clone()).or_insert(None);
                    if slot.is_none() {
                        *slot = p.field.as_ref().map(|f| f.data_type().clone());
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    types
}

/// For a function of an array and another argument, the positions of the array and of
/// the other argument.
fn array_operand(name: &str) -> Option<(usize, usize)> {
    match name {
        "array_has" | "array_position" | "array_positions" | "array_append" | "array_remove"
        | "array_remove_all" => Some((0, 1)),
        "array_prepend" => Some((1, 0)),
        _ => None,
    }
}

/// `placeholder`, when it is one, beside an array `other` (`tags @> $1`, `tags && $1`):
/// of `other`'s array type, with its declared element type (`uuid[]`).
fn array_like(
    placeholder: &Expr,
    other: &Expr,
    schema: &datafusion::common::DFSchema,
    found: &mut Vec<ContextType>,
) {
    let Expr::Placeholder(p) = placeholder else {
        return;
    };
    if let Ok((_, field)) = other.to_field(schema)
        && let DataType::List(_) = field.data_type()
    {
        let declared = sql::types::declared_type_name(&field)
            .filter(|name| name.ends_with("[]"))
            .and_then(sql::SqlType::parse);
        found.push((p.id.clone(), field.data_type().clone(), declared));
    }
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

/// The type PostgreSQL gives an argument of unknown type (a quoted literal, an untyped
/// parameter) of these functions, whatever their other arguments are: `round('2.5')` rounds
/// a float8, `repeat($1, $2)` takes an int4 count and `round($1, 2)` a numeric.
/// DataFusion would find no such function of text, or read the text as it is.
fn unknown_argument(name: &str, arity: usize, at: usize) -> Option<ast::DataType> {
    use sql::SqlType::{Bytea, Float8, Int4};
    let ty = match (name, arity, at) {
        (
            "round" | "ceil" | "ceiling" | "floor" | "log" | "abs" | "sqrt" | "cbrt" | "exp" | "ln"
            | "sign" | "degrees" | "radians" | "sin" | "cos" | "tan" | "asin" | "acos" | "atan",
            1,
            0,
        )
        | ("power" | "pow" | "atan2", 2, _) => Float8,
        ("round" | "trunc", 2, 0) | ("log" | "div", 2, _) => {
            // Unconstrained, so that `numeric::rewrite_numeric_casts` keeps its digits.
            return Some(ast::DataType::Numeric(ast::ExactNumberInfo::None));
        }
        ("round" | "trunc", 2, 1)
        | ("left" | "right" | "repeat", 2, 1)
        | ("lpad" | "rpad", 2 | 3, 1)
        | ("split_part", 3, 2)
        | ("chr", 1, 0)
        | ("lag" | "lead", 2 | 3, 1)
        | ("ntile", 1, 0)
        | ("nth_value", 2, 1)
        | ("make_date", 3, _)
        | ("make_timestamp", 6, 0..=4) => Int4,
        ("make_timestamp", 6, 5) => Float8,
        ("encode", 2, 0) | ("sha224" | "sha256" | "sha384" | "sha512", 1, 0) => Bytea,
        _ => return None,
    };
    Some(ty.to_ast())
}

/// Reads the unknown-type arguments of the functions of [`unknown_argument`] as PostgreSQL
/// does, by casting them; the operand of `ceil`/`floor` as a float8, and `substr`'s
/// positions as int4.
pub(crate) fn cast_unknown_arguments(stmt: &mut ast::Statement) {
    use ast::VisitMut;
    struct Casts;
    impl ast::VisitorMut for Casts {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut ast::Expr) -> std::ops::ControlFlow<()> {
            match e {
                ast::Expr::Function(f) => {
                    let Some(name) = f.name.0.last().and_then(|p| p.as_ident()) else {
                        return std::ops::ControlFlow::Continue(());
                    };
                    let name = sql::ddl::normalize_ident(name);
                    if let ast::FunctionArguments::List(list) = &mut f.args {
                        let arity = list.args.len();
                        let integers = name == "generate_series" && list.args.iter().any(integer);
                        for (at, arg) in list.args.iter_mut().enumerate() {
                            if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg)) = arg
                            {
                                if let Some(ty) = unknown_argument(&name, arity, at) {
                                    cast_unknown(arg, ty);
                                } else if integers {
                                    // `generate_series(1, $1)`: the bounds' type, a bigint.
                                    cast_unknown(arg, sql::SqlType::Int8.to_ast());
                                }
                            }
                        }
                    }
                }
                ast::Expr::UnaryOp {
                    op: ast::UnaryOperator::Not,
                    expr,
                } => cast_unknown(expr, sql::SqlType::Bool.to_ast()),
                ast::Expr::Ceil {
                    expr,
                    field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
                }
                | ast::Expr::Floor {
                    expr,
                    field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
                } => cast_unknown(expr, sql::SqlType::Float8.to_ast()),
                // `substr`'s positions; `substring(x, '2', '3')` is PostgreSQL's regular expression form.
                ast::Expr::Substring {
                    substring_from,
                    substring_for,
                    shorthand: true,
                    ..
                } => {
                    for position in [substring_from, substring_for].into_iter().flatten() {
                        cast_unknown(position, sql::SqlType::Int4.to_ast());
                    }
                }
                _ => {}
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Casts);
}

/// Whether `arg` is an integer constant (`1`, `-1`).
fn integer(arg: &ast::FunctionArg) -> bool {
    let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = arg else {
        return false;
    };
    let e = match e {
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => expr.as_ref(),
        e => e,
    };
    matches!(e, ast::Expr::Value(v) if matches!(&v.value, ast::Value::Number(n, _) if !n.contains(['.', 'e', 'E'])))
}

/// `e` cast to `ty` when it is a quoted literal or a parameter.
fn cast_unknown(e: &mut ast::Expr, ty: ast::DataType) {
    let ast::Expr::Value(v) = e else {
        return;
    };
    if !matches!(
        v.value,
        ast::Value::SingleQuotedString(_) | ast::Value::Placeholder(_)
    ) {
        return;
    }
    let unknown = std::mem::replace(e, ast::Expr::value(ast::Value::Null));
    *e = ast::Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(unknown),
        data_type: ty,
        array: false,
        format: None,
    };
}

/// Types parameters beside an operator as PostgreSQL resolves them where DataFusion would
/// give them the other operand's type, or none: both sides of `||` are text unless the
/// other is an array (`$1 || $2`, `$1 || 1`), what is added to a timestamp is an interval
/// (`now() + $1`), the operands of AND and OR are booleans, and those of `^` float8.
#[derive(Debug, Default)]
pub struct UnknownOperands;

impl ExprPlanner for UnknownOperands {
    fn plan_binary_op(
        &self,
        mut expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        use ast::BinaryOperator as Op;
        let known = |e: &Expr| match e {
            Expr::Placeholder(Placeholder { field: None, .. }) => None,
            e => e.get_type(schema).ok(),
        };
        let (left, right) = (known(&expr.left), known(&expr.right));
        for (placeholder, other) in [(&mut expr.left, &right), (&mut expr.right, &left)] {
            let Expr::Placeholder(p @ Placeholder { field: None, .. }) = placeholder else {
                continue;
            };
            let ty = match (&expr.op, other) {
                (Op::StringConcat, Some(DataType::List(_))) => continue,
                (Op::StringConcat, _) => DataType::Utf8,
                (Op::Plus, Some(DataType::Timestamp(..))) => {
                    DataType::Interval(IntervalUnit::MonthDayNano)
                }
                (Op::And | Op::Or, _) => DataType::Boolean,
                (Op::PGExp, _) => DataType::Float64,
                _ => continue,
            };
            p.field = Some(Arc::new(Field::new("", ty, true)));
        }
        Ok(PlannerResult::Original(expr))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unknown_arguments_are_cast_to_what_the_function_takes() {
        let cast = |sql: &str| {
            let mut stmt = crate::session::parse_sql(sql).unwrap().remove(0);
            super::cast_unknown_arguments(&mut stmt);
            stmt.to_string()
        };
        assert_eq!(
            cast("SELECT round($1, 2), repeat('ab', $2), ceil('1.5'), substr(t, '2')"),
            "SELECT round(CAST($1 AS NUMERIC), 2), repeat('ab', CAST($2 AS INTEGER)), \
             CEIL(CAST('1.5' AS DOUBLE PRECISION)), SUBSTR(t, CAST('2' AS INTEGER))"
        );
        // Typed arguments, and text positions, are left as they are (`parse_sql` made
        // `substring`'s the regular expression PostgreSQL reads there).
        assert_eq!(
            cast("SELECT round($1::float8), repeat($1, 3), substring(t, '2')"),
            "SELECT round($1::FLOAT8), repeat($1, 3), partita_substring_regex(t, '2') AS \"substring\""
        );
    }
}
