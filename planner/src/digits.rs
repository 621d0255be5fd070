//! Which numeric results show each value with its own digits.
//!
//! PostgreSQL's `numeric` carries a display scale per value: a column declared `numeric`
//! shows 1.5 as written, `1.5 + 2.25` is 3.75 and `sum` of such a column has the digits of
//! its widest value. Arrow gives a whole column one scale, and Partita stores unconstrained
//! numerics at scale 16 (`UNCONSTRAINED_NUMERIC_SCALE`), so these values are sent without
//! the trailing zeros that scale adds. An expression of fixed-scale operands keeps its scale
//! (`numeric(10,2)` columns, constants, `round(x, 2)`, quotients and averages, whose 16 digits
//! PostgreSQL shows too).
//!
//! A value of unconstrained numeric is taken to have no trailing zeros of its own, and what
//! PostgreSQL would certainly show is kept: `a + c` with `c numeric(10,2)` shows at least two
//! fractional digits, `a * 2.5` at least one. (PostgreSQL shows `1.5 + 2.5` as 4.0 and
//! `1.5 * 2` as 3.0; Partita shows 4 and 3, as it cannot know a value's own scale.) A
//! result that is one of several values (CASE, coalesce, UNION) shows the most digits one
//! of them certainly has, so `coalesce(a, c)` shows a's 1.5 as 1.50.
//!
//! [`output_scales`] finds, for each result column of a plan, whether its values are of that
//! kind and the fractional digits they show at least; [`own_digit_text`] gives casts of such
//! values to text the same digits.

use crate::output::OutputText;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, JoinType, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::utils::grouping_set_to_exprlist;
use datafusion::logical_expr::{
    BinaryExpr, Cast, Distinct, Expr, ExprSchemable, LogicalPlan, Operator, ScalarUDF, TryCast,
};
use std::sync::Arc;

/// For each output column of `plan`: `Some(n)` when its values are unconstrained numerics
/// shown with their own digits, at least `n` of them after the point; `None` when they are
/// shown at the column's scale (or are not numerics).
pub fn output_scales(plan: &LogicalPlan) -> Vec<Option<i8>> {
    let fields = plan.schema().fields();
    let scales = match plan {
        LogicalPlan::Projection(p) => {
            let context = Context::over(plan);
            p.expr.iter().map(|e| context.least_scale(e)).collect()
        }
        LogicalPlan::Aggregate(a) => {
            let context = Context::over(plan);
            let mut scales: Vec<_> = grouping_set_to_exprlist(&a.group_expr)
                .map(|groups| groups.into_iter().map(|e| context.least_scale(e)).collect())
                .unwrap_or_default();
            // A grouping set's internal grouping id comes between groups and aggregates.
            scales.resize(fields.len().saturating_sub(a.aggr_expr.len()), None);
            scales.extend(a.aggr_expr.iter().map(|e| context.least_scale(e)));
            scales
        }
        LogicalPlan::Window(w) => {
            let context = Context::over(plan);
            let mut scales = context.inputs.clone();
            scales.extend(w.window_expr.iter().map(|e| context.least_scale(e)));
            scales
        }
        LogicalPlan::Distinct(Distinct::On(on)) => {
            let context = Context::over(plan);
            on.select_expr
                .iter()
                .map(|e| context.least_scale(e))
                .collect()
        }
        LogicalPlan::Join(j) => {
            let (left, right) = (output_scales(&j.left), output_scales(&j.right));
            match j.join_type {
                JoinType::LeftSemi | JoinType::LeftAnti => left,
                JoinType::RightSemi | JoinType::RightAnti => right,
                JoinType::LeftMark => [left, vec![None]].concat(),
                JoinType::RightMark => [right, vec![None]].concat(),
                _ => [left, right].concat(),
            }
        }
        LogicalPlan::Union(u) => {
            let inputs: Vec<_> = u.inputs.iter().map(|input| output_scales(input)).collect();
            (0..fields.len())
                .map(|c| {
                    let scales = u.inputs.iter().zip(&inputs).map(|(input, scales)| {
                        scales
                            .get(c)
                            .copied()
                            .flatten()
                            .ok_or_else(|| fixed_output_scale(input, c))
                    });
                    // Own digits when some input has them; at least the most any input
                    // certainly shows (see `Context::chosen`).
                    let any_own = scales.clone().any(|s| s.is_ok());
                    let least = scales.map(|s| s.unwrap_or_else(|fixed| fixed)).max();
                    least.filter(|_| any_own)
                })
                .collect()
        }
        LogicalPlan::Values(v) => (0..fields.len())
            .map(|c| {
                // `VALUES (1.5), (2.25)` keeps each constant's digits, as PostgreSQL does,
                // when every row is a constant written without trailing zeros (`1.50` might
                // be a numeric(p,2) value; casts cannot be told from coercion's).
                let scales: Option<Vec<i8>> = v
                    .values
                    .iter()
                    .map(|row| constant_scale(row.get(c)?))
                    .collect();
                let scales = scales?;
                let least = scales.iter().copied().min()?;
                scales.iter().any(|&s| s != least).then_some(least)
            })
            .collect(),
        LogicalPlan::Filter(_)
        | LogicalPlan::Sort(_)
        | LogicalPlan::Limit(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Repartition(_)
        | LogicalPlan::Distinct(Distinct::All(_)) => output_scales(plan.inputs()[0]),
        _ => Vec::new(),
    };
    if scales.len() == fields.len() {
        scales
    } else {
        // Other nodes (table scans above all) say it in their fields' metadata.
        fields
            .iter()
            .map(|f| sql::types::own_digits(f).map(|n| n as i8))
            .collect()
    }
}

/// `schema`, the result of `plan`, with its decimal columns marked as showing their values'
/// own digits or not (`sql::types::own_digits` reads the mark).
pub fn mark_own_digits(schema: SchemaRef, plan: &LogicalPlan) -> SchemaRef {
    use sql::types::{FIELD_TYPE_KEY, LEAST_SCALE_KEY};
    if !schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Decimal128(..)))
    {
        return schema;
    }
    let scales = output_scales(plan);
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let field = field.as_ref().clone();
            if !matches!(field.data_type(), DataType::Decimal128(..)) {
                return field;
            }
            let mut metadata = field.metadata().clone();
            match scales.get(i).copied().flatten() {
                Some(least) => {
                    metadata.insert(FIELD_TYPE_KEY.into(), "numeric".into());
                    metadata.insert(LEAST_SCALE_KEY.into(), least.to_string());
                }
                // A cast to numeric(p,s) of a numeric column carries the column's metadata.
                None if sql::types::declared_type_name(&field) == Some("numeric") => {
                    metadata.remove(FIELD_TYPE_KEY);
                    metadata.remove(LEAST_SCALE_KEY);
                }
                None => return field,
            }
            field.with_metadata(metadata)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// The scale the values of a fixed-scale output column of `plan` have (before the casts a
/// union's coercion adds).
fn fixed_output_scale(plan: &LogicalPlan, c: usize) -> i8 {
    if let LogicalPlan::Projection(p) = plan
        && let Some(expr) = p.expr.get(c)
    {
        let expr = match expr {
            Expr::Alias(a) => a.expr.as_ref(),
            e => e,
        };
        return Context::over(plan).fixed_scale(expr, true);
    }
    match plan.schema().fields().get(c).map(|f| f.data_type()) {
        Some(DataType::Decimal128(_, s)) => *s,
        _ => 0,
    }
}

/// The scale a constant's own digits have (`1.5` → 1), looking through the casts that
/// coercion puts around it; `None` for other expressions and for a constant with trailing
/// fractional zeros.
fn constant_scale(expr: &Expr) -> Option<i8> {
    match expr {
        Expr::Literal(v, _) => match v {
            ScalarValue::Decimal128(Some(m), _, s) => (*s == 0 || m % 10 != 0).then_some(*s),
            ScalarValue::Int8(_)
            | ScalarValue::Int16(_)
            | ScalarValue::Int32(_)
            | ScalarValue::Int64(_) => Some(0),
            _ => None,
        },
        Expr::Cast(c) => constant_scale(&c.expr),
        _ => None,
    }
}

/// What the expressions of one plan node refer to: its input columns and their scales.
struct Context {
    schema: DFSchema,
    inputs: Vec<Option<i8>>,
}

impl Context {
    fn over(plan: &LogicalPlan) -> Context {
        Context {
            schema: crate::semantics::input_schema(plan),
            inputs: plan.inputs().into_iter().flat_map(output_scales).collect(),
        }
    }

    /// `Some(n)` when `expr`'s values are unconstrained numerics with their own digits, at
    /// least `n` after the point (never more than the Arrow scale); for a list, its
    /// elements (`array_agg` under `percentile_disc` and `mode`).
    fn least_scale(&self, expr: &Expr) -> Option<i8> {
        let scale = match expr.get_type(&self.schema) {
            Ok(DataType::Decimal128(_, scale)) => scale,
            Ok(DataType::List(item)) => match item.data_type() {
                DataType::Decimal128(_, scale) => *scale,
                _ => return None,
            },
            _ => return None,
        };
        let least = match expr {
            Expr::Alias(a) => self.least_scale(&a.expr),
            Expr::Negative(e) => self.least_scale(e),
            Expr::Column(c) => {
                let index = self.schema.index_of_column(c).ok()?;
                self.inputs.get(index).copied().flatten()
            }
            // A parameter's value is shown as the client wrote it.
            Expr::Placeholder(_) => Some(0),
            Expr::OuterReferenceColumn(field, _) => sql::types::own_digits(field).map(|n| n as i8),
            Expr::ScalarSubquery(s) => output_scales(&s.subquery).first().copied().flatten(),
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                // PostgreSQL's sum and remainder have the larger scale, its product the sum.
                Operator::Plus | Operator::Minus | Operator::Modulo => {
                    self.combined(&[left, right], |a, b| a.max(b))
                }
                Operator::Multiply => self.combined(&[left, right], |a, b| a + b),
                _ => None,
            },
            Expr::Cast(Cast { expr: inner, field })
            | Expr::TryCast(TryCast { expr: inner, field }) => {
                // A cast that keeps the scale (coercion to a common type) keeps the digits;
                // a cast to numeric(p,s) gives every value scale s. (An explicit cast to the
                // same type cannot be told from coercion's.)
                match (inner.get_type(&self.schema), field.data_type()) {
                    (Ok(DataType::Decimal128(_, from)), DataType::Decimal128(38, to))
                        if from == *to =>
                    {
                        self.least_scale(inner)
                    }
                    _ => None,
                }
            }
            Expr::Case(case) => {
                let results: Vec<&Expr> = case
                    .when_then_expr
                    .iter()
                    .map(|(_, then)| then.as_ref())
                    .chain(case.else_expr.as_deref())
                    .collect();
                self.chosen(&results)
            }
            Expr::ScalarFunction(f) => match (f.name(), f.args.as_slice()) {
                ("numeric_mul", [a, b, _]) => self.combined(&[a, b], |a, b| a + b),
                ("abs" | "partita_nullable", [a]) | ("nullif", [a, _]) => self.least_scale(a),
                // `percentile_disc` and `mode`: one of the sorted values.
                ("array_element", [list, _]) => self.least_scale(list),
                (crate::functions::MODE, [list]) => self.least_scale(list),
                ("coalesce" | "greatest" | "least", args) => {
                    self.chosen(&args.iter().collect::<Vec<_>>())
                }
                // `x::numeric` of a float or of text has the digits of each value.
                ("numeric", [Expr::Placeholder(_)]) => Some(0),
                ("numeric", [a]) => match a.get_type(&self.schema) {
                    Ok(DataType::Decimal128(..)) => self.least_scale(a),
                    Ok(DataType::Float32 | DataType::Float64) => Some(0),
                    Ok(DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
                        if !matches!(a, Expr::Literal(..)) =>
                    {
                        Some(0)
                    }
                    _ => None,
                },
                _ => None,
            },
            Expr::AggregateFunction(f) => match (f.func.name(), f.params.args.as_slice()) {
                (
                    "sum" | "min" | "max" | "first_value" | "last_value" | "any_value"
                    | "array_agg",
                    [a, ..],
                ) => self.least_scale(a),
                _ => None,
            },
            Expr::WindowFunction(w) => match (w.fun.name(), w.params.args.as_slice()) {
                (
                    "sum" | "min" | "max" | "first_value" | "last_value" | "nth_value" | "lag"
                    | "lead",
                    [a, ..],
                ) => self.least_scale(a),
                _ => None,
            },
            _ => None,
        };
        least.map(|n| n.clamp(0, scale.max(0)))
    }

    /// The scale a fixed-scale operand's values have: its Arrow scale, 0 for integers (also
    /// when coercion made them decimals). With `through_casts`, a decimal made wider by a
    /// cast (coercion to the type of CASE's or coalesce's other choices) has its own scale.
    fn fixed_scale(&self, expr: &Expr, through_casts: bool) -> i8 {
        if let Expr::Cast(Cast { expr: inner, field }) = expr {
            match (inner.get_type(&self.schema), field.data_type()) {
                (Ok(t), _) if t.is_integer() => return 0,
                (Ok(DataType::Decimal128(_, from)), DataType::Decimal128(_, to))
                    if through_casts && from <= *to =>
                {
                    return self.fixed_scale(inner, true);
                }
                _ => {}
            }
        }
        match expr.get_type(&self.schema) {
            Ok(DataType::Decimal128(_, s)) => s,
            _ => 0,
        }
    }

    /// The least scale of an arithmetic result over `operands`, when one of them has its
    /// own digits: `combine` of each operand's least (or fixed) scale.
    fn combined(&self, operands: &[&Expr], combine: impl Fn(i8, i8) -> i8) -> Option<i8> {
        self.combined_as(operands, false, combine)
    }

    fn combined_as(
        &self,
        operands: &[&Expr],
        through_casts: bool,
        combine: impl Fn(i8, i8) -> i8,
    ) -> Option<i8> {
        let scales: Vec<Option<i8>> = operands.iter().map(|e| self.least_scale(e)).collect();
        if scales.iter().all(Option::is_none) {
            return None;
        }
        operands
            .iter()
            .zip(scales)
            .map(|(e, s)| s.unwrap_or_else(|| self.fixed_scale(e, through_casts)))
            .reduce(combine)
    }

    /// The least scale of a result that is one of `choices` (CASE, coalesce), when one of
    /// them has its own digits: the most any choice certainly shows, so that values of a
    /// `numeric(p,s)` choice keep their s digits (those of the others may show more zeros
    /// than in PostgreSQL).
    fn chosen(&self, choices: &[&Expr]) -> Option<i8> {
        self.combined_as(choices, true, |a, b| a.max(b))
    }
}

/// Casts to text of unconstrained numerics with their own digits write those digits
/// (`(a + b)::text` is '3.75', not '3.7500000000000000'). Output columns keep their names.
pub fn own_digit_text(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let mut casts = false;
    plan.apply_expressions(|e| {
        e.apply(|e| {
            casts |= text_cast(e).is_some();
            Ok(if casts {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        })
    })?;
    if !casts {
        return Ok(Transformed::no(plan));
    }
    let context = Context::over(&plan);
    crate::semantics::rewrite_node_expressions(plan, |e| {
        let Some((inner, to)) = text_cast(&e) else {
            return Ok(Transformed::no(e));
        };
        let Some(least) = context.least_scale(inner) else {
            return Ok(Transformed::no(e));
        };
        let text =
            ScalarUDF::new_from_impl(OutputText::own_digits(least)).call(vec![inner.clone()]);
        Ok(Transformed::yes(match to {
            DataType::Utf8 => text,
            other => datafusion::logical_expr::cast(text, other.clone()),
        }))
    })
}

/// The operand and target type of a cast to text.
fn text_cast(expr: &Expr) -> Option<(&Expr, &DataType)> {
    let (Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field })) = expr else {
        return None;
    };
    let to = field.data_type();
    matches!(
        to,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    )
    .then_some((expr.as_ref(), to))
}
