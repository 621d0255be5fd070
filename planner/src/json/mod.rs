//! `json` and `jsonb`: their operators and functions, as PostgreSQL has them.
//!
//! Values are text in Arrow (a column's declared type, or an expression's, is in its field
//! metadata); `value` reads and writes them. The operators (`->`, `->>`, `#>`, `#>>`, `@>`,
//! `<@`, `?`, `?|`, `?&`, and jsonb's `||`, `-`, `#-`) are planned as calls of `functions`'
//! scalar functions by [`JsonOperators`]. The aggregates are rewritten on the parsed
//! statement ([`rewrite`]) into DataFusion's own `array_agg` around those functions, and the
//! set-returning functions (by `crate::srf`) into `unnest`:
//!
//! - `json_agg(x ORDER BY y)` is `json_agg(array_agg(to_json(x) ORDER BY y))`, where the
//!   outer `json_agg` is a scalar function making the array of the collected values; so
//!   ordering, DISTINCT and FILTER work as for `array_agg`;
//! - `json_object_agg(k, v)` collects `partita_json_member(k, v)`'s `"k" : v` texts;
//! - `jsonb_array_elements(doc)` in a select list is `unnest(partita_json_elements(doc))`; in
//!   FROM it is a derived table of that, and `jsonb_each(doc)` one of two unnested lists
//!   (keys and values), which DataFusion zips.

pub mod functions;
pub mod value;

pub use functions::Kind;
use functions::{JsonFunction, KeyMatch, Op};

use crate::pg_catalog::call;
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{ExprSchemable, ScalarUDF};
use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    Statement, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;
use std::sync::Arc;

/// Registers the JSON functions.
pub fn register(ctx: &SessionContext) {
    for function in JsonFunction::all() {
        ctx.register_udf(ScalarUDF::new_from_impl(function));
    }
}

/// The input function of `kind` (what a cast from text runs).
pub fn input_function(kind: Kind) -> Arc<ScalarUDF> {
    let name = match kind {
        Kind::Json => "partita_json_in",
        Kind::Jsonb => "partita_jsonb_in",
    };
    Arc::new(ScalarUDF::new_from_impl(JsonFunction::new(
        name,
        Op::Input(kind),
    )))
}

/// jsonb `=` (and `<>`, `IN`, `IS DISTINCT FROM`) with jsonb or text compares values, as
/// PostgreSQL does: both sides are read as jsonb and compared by
/// [`value::Json::equality_key`], so `'{"a": 1.0}'` equals `'{"a":1}'`. `<`, `<=`, `>` and
/// `>=` compare in jsonb's order ([`value::Json::sort_key`]).
pub fn equality(
    expr: datafusion::logical_expr::Expr,
    schema: &DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{BinaryExpr, Expr as LExpr, Operator, expr::InList};
    let jsonb = |e: &LExpr| {
        e.to_field(schema)
            .ok()
            .and_then(|(_, f)| crate::casts::declared(&f))
            == Some(sql::SqlType::Jsonb)
    };
    let text = |e: &LExpr| {
        matches!(
            e.get_type(schema),
            Ok(DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
        )
    };
    let key = |e: LExpr| {
        ScalarUDF::new_from_impl(JsonFunction::new(functions::EQUALITY_KEY, Op::EqualityKey))
            .call(vec![e])
    };
    let jsonb_and_text = |l: &LExpr, r: &LExpr| jsonb(l) && text(r) || jsonb(r) && text(l);
    Ok(match expr {
        LExpr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(
                op,
                Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
            ) && jsonb_and_text(&left, &right) =>
        {
            Transformed::yes(LExpr::BinaryExpr(BinaryExpr::new(
                Box::new(sort_key(*left)),
                op,
                Box::new(sort_key(*right)),
            )))
        }
        LExpr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(
                op,
                Operator::Eq
                    | Operator::NotEq
                    | Operator::IsDistinctFrom
                    | Operator::IsNotDistinctFrom
            ) && jsonb_and_text(&left, &right) =>
        {
            Transformed::yes(LExpr::BinaryExpr(BinaryExpr::new(
                Box::new(key(*left)),
                op,
                Box::new(key(*right)),
            )))
        }
        LExpr::InList(InList {
            expr,
            list,
            negated,
        }) if jsonb(&expr) && list.iter().all(text) => {
            Transformed::yes(LExpr::InList(InList::new(
                Box::new(key(*expr)),
                list.into_iter().map(key).collect(),
                negated,
            )))
        }
        other => Transformed::no(other),
    })
}

/// What jsonb ordering compares: `e`'s [`value::Json::sort_key`].
fn sort_key(e: datafusion::logical_expr::Expr) -> datafusion::logical_expr::Expr {
    ScalarUDF::new_from_impl(JsonFunction::new(functions::SORT_KEY, Op::SortKey)).call(vec![e])
}

/// ORDER BY a jsonb value orders in jsonb's order, not by its text.
pub fn sort_by_value(
    plan: datafusion::logical_expr::LogicalPlan,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::LogicalPlan>> {
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::LogicalPlan;
    let LogicalPlan::Sort(mut sort) = plan else {
        return Ok(Transformed::no(plan));
    };
    let schema = sort.input.schema().clone();
    let mut changed = false;
    for key in &mut sort.expr {
        let declared = key
            .expr
            .to_field(&schema)
            .ok()
            .and_then(|(_, f)| crate::casts::declared(&f));
        if declared == Some(sql::SqlType::Jsonb) {
            key.expr = sort_key(key.expr.clone());
            changed = true;
        }
    }
    Ok(Transformed::new_transformed(
        LogicalPlan::Sort(sort),
        changed,
    ))
}

/// Plans the JSON operators on text operands as calls of the JSON functions.
#[derive(Debug, Default)]
pub struct JsonOperators;

impl ExprPlanner for JsonOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        use datafusion::arrow::datatypes::DataType;
        let field = |e: &datafusion::logical_expr::Expr| e.to_field(schema).ok().map(|(_, f)| f);
        let (left, right) = (field(&expr.left), field(&expr.right));
        let text = |f: &Option<Arc<datafusion::arrow::datatypes::Field>>| {
            f.as_ref().is_some_and(|f| {
                matches!(
                    f.data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
                )
            })
        };
        let declared = |f: &Option<Arc<datafusion::arrow::datatypes::Field>>| {
            f.as_ref().and_then(|f| Kind::declared(f))
        };
        let jsonb = |f| declared(f) == Some(Kind::Jsonb);
        // PostgreSQL's lexer drops a trailing minus from an operator (`doc->-1` is
        // `doc -> -1`); sqlparser reads `->-` as one operator.
        if let BinaryOperator::Custom(custom) = &expr.op
            && let Some(op) = match custom.as_str() {
                "->-" => Some(BinaryOperator::Arrow),
                "->>-" => Some(BinaryOperator::LongArrow),
                _ => None,
            }
        {
            let negated = RawBinaryExpr {
                op,
                left: expr.left,
                right: datafusion::logical_expr::Expr::Negative(Box::new(expr.right)),
            };
            return self.plan_binary_op(negated, schema);
        }
        let (name, op, swap) = match expr.op {
            BinaryOperator::Arrow => ("->", Op::Get { text: false }, false),
            BinaryOperator::LongArrow => ("->>", Op::Get { text: true }, false),
            BinaryOperator::HashArrow => ("#>", Op::Path { text: false }, false),
            BinaryOperator::HashLongArrow => ("#>>", Op::Path { text: true }, false),
            BinaryOperator::AtArrow if text(&right) => ("@>", Op::Contains, false),
            BinaryOperator::ArrowAt if text(&left) => ("<@", Op::Contains, true),
            BinaryOperator::Question => ("?", Op::HasKey(KeyMatch::One), false),
            BinaryOperator::QuestionPipe => ("?|", Op::HasKey(KeyMatch::Any), false),
            BinaryOperator::QuestionAnd => ("?&", Op::HasKey(KeyMatch::All), false),
            BinaryOperator::StringConcat if jsonb(&left) || jsonb(&right) => {
                ("||", Op::Concat, false)
            }
            BinaryOperator::Minus if jsonb(&left) => ("-", Op::Delete, false),
            BinaryOperator::HashMinus => ("#-", Op::DeletePath, false),
            _ => return Ok(PlannerResult::Original(expr)),
        };
        if !text(if swap { &right } else { &left }) {
            return Ok(PlannerResult::Original(expr));
        }
        let (subject, other) = match swap {
            true => (expr.right, expr.left),
            false => (expr.left, expr.right),
        };
        let function = JsonFunction::new(&format!("partita_operator {name}"), op);
        Ok(PlannerResult::Planned(
            ScalarUDF::new_from_impl(function).call(vec![subject, other]),
        ))
    }
}

/// Rewrites the JSON aggregates and set-returning functions of `stmt` (see the module
/// comment).
pub fn rewrite(stmt: &mut Statement) -> crate::Result<()> {
    match stmt.visit(&mut Rewriter) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Rewriter;

/// The lowercased unqualified name of a function.
pub(crate) fn function_name(name: &ObjectName) -> Option<String> {
    Some(name.0.last()?.as_ident()?.value.to_ascii_lowercase())
}

/// The plain positional arguments of a call, or `None` when it has others. A whole row
/// `t.*` is taken as an expression, which `crate::rows` writes out.
pub(crate) fn plain_args(args: &[FunctionArg]) -> Option<Vec<Expr>> {
    args.iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(row)) => {
                Some(Expr::QualifiedWildcard(
                    row.clone(),
                    ast::helpers::attached_token::AttachedToken::empty(),
                ))
            }
            _ => None,
        })
        .collect()
}

/// A set-returning JSON function: the lists it unnests, each with its column name.
pub(crate) fn set_returning(name: &str, arg: &Expr) -> Option<Vec<(Expr, &'static str)>> {
    // The json_… functions read their argument as json, the jsonb_… ones as jsonb.
    let family = if name.starts_with("jsonb_") {
        "jsonb"
    } else {
        "json"
    };
    let list = |helper: &str, column| {
        let helper = format!("partita_{family}_{helper}");
        (call(&helper, vec![arg.clone()]), column)
    };
    let column = match name {
        "json_object_keys" => "json_object_keys",
        "jsonb_object_keys" => "jsonb_object_keys",
        _ => "value",
    };
    Some(match name.strip_prefix(family)?.strip_prefix('_')? {
        "array_elements" => vec![list("elements", column)],
        "array_elements_text" => vec![list("elements_text", column)],
        "object_keys" => vec![list("object_keys", column)],
        "each" => vec![list("object_keys", "key"), list("object_values", "value")],
        "each_text" => vec![
            list("object_keys", "key"),
            list("object_values_text", "value"),
        ],
        _ => return None,
    })
}

/// `row_to_json(ROW(1, 'a'))` (or `to_json`, `to_jsonb` of a row constructor) as the object
/// PostgreSQL makes of the anonymous record, members `f1`, `f2`…; `array_to_json(a, false)`
/// as `array_to_json(a)`. `None` for other calls.
fn row_constructor_json(name: &str, f: &ast::Function) -> Option<Expr> {
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let args = plain_args(&list.args)?;
    let is_false = |e: &Expr| matches!(e, Expr::Value(v) if v.value == ast::Value::Boolean(false));
    let is_true = |e: &Expr| matches!(e, Expr::Value(v) if v.value == ast::Value::Boolean(true));
    if name == "array_to_json" {
        return match args.as_slice() {
            [array, pretty] if is_false(pretty) => Some(call(name, vec![array.clone()])),
            _ => None,
        };
    }
    let (row, pretty) = match (name, args.as_slice()) {
        ("row_to_json" | "to_json" | "to_jsonb", [row]) => (row, false),
        ("row_to_json", [row, pretty]) if is_true(pretty) || is_false(pretty) => {
            (row, is_true(pretty))
        }
        _ => return None,
    };
    let fields = match row {
        Expr::Tuple(fields) => fields.clone(),
        Expr::Function(r) if function_name(&r.name).as_deref() == Some("row") => match &r.args {
            FunctionArguments::List(l) => plain_args(&l.args)?,
            FunctionArguments::None => vec![],
            _ => return None,
        },
        _ => return None,
    };
    // `ROW(t.*)` is t's columns, which `crate::rows` knows.
    if fields
        .iter()
        .any(|f| matches!(f, Expr::QualifiedWildcard(..)))
    {
        return None;
    }
    Some(record_object(name, fields, pretty))
}

/// `row_to_json` (pretty or not), `to_json` or `to_jsonb` (`name`) of an anonymous record
/// of `fields`: an object of members `f1`, `f2`….
pub(crate) fn record_object(name: &str, fields: Vec<Expr>, pretty: bool) -> Expr {
    let mut members = Vec::with_capacity(fields.len() * 2);
    for (i, field) in fields.into_iter().enumerate() {
        members.push(Expr::value(ast::Value::SingleQuotedString(format!(
            "f{}",
            i + 1
        ))));
        members.push(field);
    }
    // `to_json(x)` of a json object is the object, under to_json's name.
    match (name, pretty) {
        ("to_jsonb", _) => call(name, vec![call("jsonb_build_object", members)]),
        ("to_json", _) => call(name, vec![call(functions::ROW_OBJECT, members)]),
        (_, true) => call(functions::ROW_OBJECT_PRETTY, members),
        _ => call(functions::ROW_OBJECT, members),
    }
}

impl VisitorMut for Rewriter {
    type Break = crate::Error;

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<crate::Error> {
        let Expr::Function(f) = e else {
            return ControlFlow::Continue(());
        };
        let Some(name) = function_name(&f.name) else {
            return ControlFlow::Continue(());
        };
        if let Some(written) = row_constructor_json(&name, f) {
            *e = written;
            return ControlFlow::Continue(());
        }
        let convert = match name.as_str() {
            "json_agg" => "to_json",
            "jsonb_agg" => "to_jsonb",
            "json_object_agg" => "partita_json_member",
            "jsonb_object_agg" => "partita_jsonb_member",
            _ => return ControlFlow::Continue(()),
        };
        let FunctionArguments::List(list) = &f.args else {
            return ControlFlow::Continue(());
        };
        let Some(args) = plain_args(&list.args) else {
            return ControlFlow::Continue(());
        };
        // Records are separated as `json_agg(t)`'s rows are (`crate::rows`).
        let record = match args.as_slice() {
            [Expr::Tuple(_)] => true,
            [Expr::Function(f)] => function_name(&f.name).as_deref() == Some("row"),
            _ => false,
        };
        // Already rewritten (a statement read back from its text): the final step, of the
        // collected values.
        if let [Expr::Function(inner), ..] = args.as_slice()
            && function_name(&inner.name).as_deref() == Some("array_agg")
        {
            return ControlFlow::Continue(());
        }
        // PostgreSQL collects DISTINCT values sorted; the final step sorts them when no
        // ORDER BY says otherwise.
        let distinct = convert.starts_with("to_json")
            && matches!(
                list.duplicate_treatment,
                Some(ast::DuplicateTreatment::Distinct)
            )
            && !list
                .clauses
                .iter()
                .any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)));
        let mut collect = f.clone();
        collect.name = ObjectName::from(vec![Ident::new("array_agg")]);
        if let FunctionArguments::List(list) = &mut collect.args {
            list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(call(
                convert, args,
            )))];
        }
        let mut final_args = vec![Expr::Function(collect)];
        if distinct {
            final_args.push(Expr::value(ast::Value::Boolean(true)));
        }
        let name = match name == "json_agg" && record {
            true => functions::ROW_ARRAY.to_string(),
            false => name,
        };
        *e = call(&name, final_args);
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use crate::session::rewritten;

    #[test]
    fn aggregates_collect_with_array_agg() {
        let once = rewritten("SELECT json_agg(x ORDER BY y) FILTER (WHERE y > 1) FROM t");
        assert_eq!(
            once,
            "SELECT json_agg(array_agg(to_json(x) ORDER BY y) FILTER (WHERE y > 1)) FROM t"
        );
        // A statement read back from its rewritten text is not rewritten again.
        assert_eq!(rewritten(&once), once);
        assert_eq!(
            rewritten("SELECT jsonb_object_agg(k, v) FROM t"),
            "SELECT jsonb_object_agg(array_agg(partita_jsonb_member(k, v))) FROM t"
        );
    }
}
