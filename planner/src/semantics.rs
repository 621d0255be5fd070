//! The analyzer rule that gives planned expressions PostgreSQL's meaning where DataFusion's
//! differs: numeric result scales (`numeric`), timestamp text (`zone`), rounding casts to
//! integers and float division by zero. It runs after DataFusion's type coercion, so operand
//! types are final.

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNode;
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct PostgresSemantics;

impl AnalyzerRule for PostgresSemantics {
    fn name(&self) -> &str {
        "partita_postgres_semantics"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let schema = input_schema(&plan);
            // Output columns keep their names when their expressions are rewritten.
            let names = NamePreserver::new(&plan);
            let rewritten = plan.map_expressions(|expr| {
                let saved = names.save(&expr);
                let result = expr.transform_up(|e| {
                    crate::zone::rewrite_timestamp_text(e)?
                        .transform_data(|e| crate::numeric::rewrite_arithmetic(e, &schema))?
                        .transform_data(|e| rounding_int_cast(e, &schema))?
                        .transform_data(|e| float_division(e, &schema))
                })?;
                Ok(result.update_data(|e| saved.restore(e)))
            })?;
            if rewritten.transformed {
                rewritten.map_data(|p| p.recompute_schema())
            } else {
                Ok(rewritten)
            }
        })
        .map(|t| t.data)
    }
}

/// PostgreSQL rounds a numeric or float cast to an integer type (`9.99::int` is 10); Arrow's
/// cast truncates. A numeric's halves go away from zero (`-2.5` gives -3): the operand is
/// moved half a unit away from zero first, so the truncating cast rounds. A float's halves go
/// to even (`2.5::float8::int` is 2, as C's `rint`): the operand is rounded by
/// [`RoundHalfEven`] first.
fn rounding_int_cast(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{Cast, Expr, ExprSchemable, ScalarUDF, TryCast, lit, when};
    let (inner, to) = match &expr {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field })
            if field.data_type().is_integer() =>
        {
            (expr.as_ref(), field)
        }
        _ => return Ok(Transformed::no(expr)),
    };
    // Coercion has already run: the operand's type is final.
    let rounded = match inner.get_type(schema)? {
        DataType::Decimal128(p, s) if s > 0 => {
            let zero = ScalarValue::Decimal128(Some(0), p, s);
            let half = ScalarValue::Decimal128(Some(5 * 10i128.pow(s as u32 - 1)), p, s);
            when(
                inner.clone().lt(lit(zero)),
                inner.clone() - lit(half.clone()),
            )
            .otherwise(inner.clone() + lit(half))?
        }
        DataType::Float32 | DataType::Float64 => {
            // Already rounded: this rule runs again over its own output.
            if let Expr::ScalarFunction(f) = inner
                && f.func.name() == ROUND_HALF_EVEN
            {
                return Ok(Transformed::no(expr));
            }
            ScalarUDF::new_from_impl(RoundHalfEven::default()).call(vec![inner.clone()])
        }
        _ => return Ok(Transformed::no(expr)),
    };
    let rebuilt = match &expr {
        Expr::TryCast(_) => Expr::TryCast(TryCast {
            expr: Box::new(rounded),
            field: to.clone(),
        }),
        _ => Expr::Cast(Cast {
            expr: Box::new(rounded),
            field: to.clone(),
        }),
    };
    Ok(Transformed::yes(rebuilt))
}

const ROUND_HALF_EVEN: &str = "partita_round_half_even";

/// Rounds a float to the nearest integral value, halves to even: what PostgreSQL's float to
/// integer casts do (`rint`) before checking the range.
#[derive(Debug, PartialEq, Eq, Hash)]
struct RoundHalfEven {
    signature: datafusion::logical_expr::Signature,
}

impl Default for RoundHalfEven {
    fn default() -> Self {
        use datafusion::arrow::datatypes::DataType;
        use datafusion::logical_expr::{Signature, Volatility};
        RoundHalfEven {
            signature: Signature::uniform(
                1,
                vec![DataType::Float32, DataType::Float64],
                Volatility::Immutable,
            ),
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for RoundHalfEven {
    fn name(&self) -> &str {
        ROUND_HALF_EVEN
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(
        &self,
        arg_types: &[datafusion::arrow::datatypes::DataType],
    ) -> Result<datafusion::arrow::datatypes::DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::arrow::array::AsArray;
        use datafusion::arrow::datatypes::{Float32Type, Float64Type};
        use datafusion::common::ScalarValue;
        use datafusion::logical_expr::ColumnarValue;
        Ok(match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::Float64(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float64(v.map(f64::round_ties_even)))
            }
            ColumnarValue::Scalar(ScalarValue::Float32(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float32(v.map(f32::round_ties_even)))
            }
            ColumnarValue::Array(a) if a.as_primitive_opt::<Float64Type>().is_some() => {
                ColumnarValue::Array(std::sync::Arc::new(
                    a.as_primitive::<Float64Type>()
                        .unary::<_, Float64Type>(f64::round_ties_even),
                ))
            }
            ColumnarValue::Array(a) => ColumnarValue::Array(std::sync::Arc::new(
                a.as_primitive::<Float32Type>()
                    .unary::<_, Float32Type>(f32::round_ties_even),
            )),
            ColumnarValue::Scalar(other) => {
                return datafusion::common::plan_err!("{ROUND_HALF_EVEN}({other:?})");
            }
        })
    }
}

/// PostgreSQL refuses a float divided by zero (22012, unless the dividend is NaN) and a
/// quotient that overflows (22003); Arrow's float division gives infinity. A float `/`
/// becomes [`FloatDivide`].
fn float_division(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, Operator, ScalarUDF};
    let Expr::BinaryExpr(BinaryExpr {
        left,
        op: Operator::Divide,
        right,
    }) = &expr
    else {
        return Ok(Transformed::no(expr));
    };
    let (l, r) = (left.get_type(schema)?, right.get_type(schema)?);
    let float = |t: &DataType| matches!(t, DataType::Float32 | DataType::Float64);
    // Coercion has made both operands one type; anything else is left as it is.
    if !float(&l) || l != r {
        return Ok(Transformed::no(expr));
    }
    Ok(Transformed::yes(
        ScalarUDF::new_from_impl(FloatDivide::default())
            .call(vec![left.as_ref().clone(), right.as_ref().clone()]),
    ))
}

const FLOAT_DIVIDE: &str = "partita_float_divide";

/// `a / b` for floats of one type, refusing a zero divisor as PostgreSQL's float4div and
/// float8div do ("division by zero", 22012) unless the dividend is NaN, and a quotient out
/// of the type's range (22003).
#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatDivide {
    signature: datafusion::logical_expr::Signature,
}

impl Default for FloatDivide {
    fn default() -> Self {
        use datafusion::arrow::datatypes::DataType;
        use datafusion::logical_expr::{Signature, TypeSignature, Volatility};
        FloatDivide {
            signature: Signature::one_of(
                vec![
                    TypeSignature::Exact(vec![DataType::Float64, DataType::Float64]),
                    TypeSignature::Exact(vec![DataType::Float32, DataType::Float32]),
                ],
                Volatility::Immutable,
            ),
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for FloatDivide {
    fn name(&self) -> &str {
        FLOAT_DIVIDE
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(
        &self,
        arg_types: &[datafusion::arrow::datatypes::DataType],
    ) -> Result<datafusion::arrow::datatypes::DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::compute::kernels::numeric::div;
        use datafusion::arrow::datatypes::{Float32Type, Float64Type};
        use datafusion::logical_expr::ColumnarValue;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let left = args.args[0].to_array(rows)?;
        let right = args.args[1].to_array(rows)?;
        let zero_divisor =
            |i: usize, dividend_nan: bool| left.is_valid(i) && right.is_valid(i) && !dividend_nan;
        let refused = match left.data_type() {
            datafusion::arrow::datatypes::DataType::Float64 => {
                let (l, r) = (
                    left.as_primitive::<Float64Type>(),
                    right.as_primitive::<Float64Type>(),
                );
                (0..rows).any(|i| r.value(i) == 0.0 && zero_divisor(i, l.value(i).is_nan()))
            }
            _ => {
                let (l, r) = (
                    left.as_primitive::<Float32Type>(),
                    right.as_primitive::<Float32Type>(),
                );
                (0..rows).any(|i| r.value(i) == 0.0 && zero_divisor(i, l.value(i).is_nan()))
            }
        };
        if refused {
            return Err(datafusion::error::DataFusionError::ArrowError(
                Box::new(datafusion::arrow::error::ArrowError::DivideByZero),
                None,
            ));
        }
        let quotient = div(&left, &right)?;
        // As float8div: an infinite quotient of a finite dividend overflowed, a zero one of a
        // nonzero dividend and finite divisor underflowed (22003).
        let range = |q: f64, l: f64, r: f64| {
            if q.is_infinite() && !l.is_infinite() {
                Some("overflow")
            } else if q == 0.0 && l != 0.0 && !r.is_infinite() {
                Some("underflow")
            } else {
                None
            }
        };
        let out_of_range = (0..rows)
            .filter(|&i| quotient.is_valid(i))
            .find_map(|i| match quotient.data_type() {
                datafusion::arrow::datatypes::DataType::Float64 => range(
                    quotient.as_primitive::<Float64Type>().value(i),
                    left.as_primitive::<Float64Type>().value(i),
                    right.as_primitive::<Float64Type>().value(i),
                ),
                _ => range(
                    f64::from(quotient.as_primitive::<Float32Type>().value(i)),
                    f64::from(left.as_primitive::<Float32Type>().value(i)),
                    f64::from(right.as_primitive::<Float32Type>().value(i)),
                ),
            });
        if let Some(kind) = out_of_range {
            return Err(datafusion::error::DataFusionError::Execution(format!(
                "value out of range: {kind}"
            )));
        }
        Ok(if scalar {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(
                &quotient, 0,
            )?)
        } else {
            ColumnarValue::Array(quotient)
        })
    }
}

/// PostgreSQL types an integer constant that fits in 32 bits as `integer`, DataFusion as
/// BIGINT. A constant that is a result column of the statement (`SELECT 1 AS one`, which
/// drivers read as a number or as text depending on its type) gets PostgreSQL's type.
pub fn int4_result_constants(stmt: &mut datafusion::sql::sqlparser::ast::Statement) {
    use datafusion::sql::sqlparser::ast::{self, Expr, SelectItem, SetExpr, Statement, Value};
    let Statement::Query(q) = stmt else {
        return;
    };
    let SetExpr::Select(select) = q.body.as_mut() else {
        return;
    };
    for item in &mut select.projection {
        let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item else {
            continue;
        };
        if let Expr::Value(v) = e
            && let Value::Number(n, false) = &v.value
            && n.parse::<i32>().is_ok()
        {
            let literal = std::mem::replace(e, Expr::value(Value::Null));
            *e = Expr::Cast {
                kind: ast::CastKind::DoubleColon,
                expr: Box::new(literal),
                data_type: ast::DataType::Integer(None),
                array: false,
                format: None,
            };
        }
    }
}

/// The analyzer rule that runs before DataFusion's type coercion and refuses comparisons
/// PostgreSQL has no operator for: a text value against a number (`city = 2013`,
/// `name IN (1, 2)`) is 42883 there, where DataFusion would cast the text and fail (or
/// match) row by row. A quoted literal is not text yet in PostgreSQL (`age = '30'` is
/// fine), so string literals are left to coercion.
#[derive(Debug, Default)]
pub struct OperandTypes;

impl AnalyzerRule for OperandTypes {
    fn name(&self) -> &str {
        "partita_operand_types"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        use datafusion::common::tree_node::TreeNodeRecursion;
        use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};
        plan.apply_with_subqueries(|node| {
            let schema = input_schema(node);
            node.apply_expressions(|expr| {
                expr.apply(|e| {
                    match e {
                        Expr::BinaryExpr(BinaryExpr { left, op, right })
                            if matches!(
                                op,
                                Operator::Eq
                                    | Operator::NotEq
                                    | Operator::Lt
                                    | Operator::LtEq
                                    | Operator::Gt
                                    | Operator::GtEq
                                    | Operator::IsDistinctFrom
                                    | Operator::IsNotDistinctFrom
                            ) =>
                        {
                            refuse_text_number(left, &op.to_string(), right, &schema)?
                        }
                        Expr::InList(list) => {
                            for item in &list.list {
                                refuse_text_number(&list.expr, "=", item, &schema)?;
                            }
                        }
                        Expr::Between(Between {
                            expr, low, high, ..
                        }) => {
                            refuse_text_number(expr, ">=", low, &schema)?;
                            refuse_text_number(expr, "<=", high, &schema)?;
                        }
                        _ => {}
                    }
                    Ok(TreeNodeRecursion::Continue)
                })
            })
        })?;
        Ok(plan)
    }
}

/// 42883 when one operand is text (other than a quoted literal) and the other a number.
fn refuse_text_number(
    left: &datafusion::logical_expr::Expr,
    op: &str,
    right: &datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<()> {
    use datafusion::error::DataFusionError;
    use datafusion::logical_expr::ExprSchemable;
    // A type that cannot be worked out here (a placeholder, say) is coercion's business.
    let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema)) else {
        return Ok(());
    };
    let (Some(l_name), Some(r_name)) = (operand_type(left, &l), operand_type(right, &r)) else {
        return Ok(());
    };
    let is_text = |n: &str| n == "text";
    if is_text(l_name) != is_text(r_name) {
        return Err(DataFusionError::External(Box::new(
            crate::Error::UndefinedOperator(format!("{l_name} {op} {r_name}")),
        )));
    }
    Ok(())
}

/// PostgreSQL's name for an operand's type when it is text or a number; `None` for other
/// types, for quoted literals, whose type PostgreSQL infers from the other side, and for
/// the OID aliases (`x::regclass`, which the catalog emulation renders as a name but which
/// compares with OIDs in PostgreSQL).
fn operand_type(
    expr: &datafusion::logical_expr::Expr,
    ty: &datafusion::arrow::datatypes::DataType,
) -> Option<&'static str> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::Expr;
    Some(match ty {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            match expr {
                Expr::Literal(..) => return None,
                Expr::ScalarFunction(f)
                    if matches!(
                        f.name(),
                        "partita_relname" | "partita_typname" | "partita_nspname"
                    ) =>
                {
                    return None;
                }
                _ => {}
            }
            "text"
        }
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        // A bare integer constant is an integer in PostgreSQL when it fits one.
        DataType::Int64 => match expr {
            Expr::Literal(ScalarValue::Int64(Some(n)), _) if i32::try_from(*n).is_ok() => "integer",
            _ => "bigint",
        },
        DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Decimal128(..) | DataType::Decimal256(..) => "numeric",
        _ => return None,
    })
}

/// The analyzer rules of a Partita session: ours around DataFusion's defaults.
pub fn analyzer_rules() -> Vec<Arc<dyn AnalyzerRule + Send + Sync>> {
    let mut rules: Vec<Arc<dyn AnalyzerRule + Send + Sync>> = vec![Arc::new(OperandTypes)];
    rules.extend(datafusion::optimizer::Analyzer::new().rules);
    rules.push(Arc::new(PostgresSemantics));
    rules
}

/// The columns a plan node's expressions can name: its inputs' (its own for a leaf).
fn input_schema(plan: &LogicalPlan) -> datafusion::common::DFSchema {
    if plan.inputs().is_empty() {
        plan.schema().as_ref().clone()
    } else {
        merge_schema(&plan.inputs())
    }
}
