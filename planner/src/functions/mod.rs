//! Functions PostgreSQL clients expect that DataFusion lacks or names differently.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ScalarValue, plan_err};
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    AggregateUDF, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility, create_udf,
};
use std::sync::Arc;

mod binary;
mod datetime;
mod extract;
mod math;
pub(crate) mod regex;
pub(crate) mod rewrite;
mod row;
pub(crate) mod text;

pub(crate) use datetime::local_time_casts;
pub(crate) use datetime::{
    FINITE_OPERAND, FiniteOperand, TimestampPrecision, TransactionStart, clock_functions,
};
pub(crate) use extract::EXTRACT;
pub(crate) use math::rounding_scale;
pub(crate) use row::RowFunction;

/// Registers `version()`, `current_schema()`, `pg_backend_pid()`,
/// `numeric(x)`, `pg_typeof(x)`, and `avg` and `sum` with PostgreSQL's result types and numeric scale.
pub fn register(ctx: &SessionContext) {
    if let Ok(series) = ctx.table_function("generate_series") {
        ctx.register_udtf(
            "generate_series",
            Arc::new(datetime::DateSeries {
                inner: Arc::clone(series.function()),
            }),
        );
    }
    let constant = |name: &str, value: ScalarValue| {
        let data_type = value.data_type();
        create_udf(
            name,
            vec![],
            data_type,
            Volatility::Stable,
            Arc::new(move |_args: &[ColumnarValue]| Ok(ColumnarValue::Scalar(value.clone()))),
        )
    };
    ctx.register_udf(constant(
        "version",
        ScalarValue::Utf8(Some(crate::session::version_string())),
    ));
    ctx.register_udf(constant(
        "current_schema",
        ScalarValue::Utf8(Some("public".into())),
    ));
    register_backend_pid(ctx, std::process::id() as i32);
    ctx.register_udaf(AggregateUDF::new_from_impl(crate::numeric::PgAvg::new()));
    ctx.register_udaf(AggregateUDF::new_from_impl(crate::numeric::PgSum::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(
        crate::numeric::ToNumeric::default(),
    ));
    ctx.register_udf(ScalarUDF::new_from_impl(crate::subquery::SingleRow::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(Length::new("length")));
    ctx.register_udf(ScalarUDF::new_from_impl(Length::new("octet_length")));
    ctx.register_udf(ScalarUDF::new_from_impl(PgTypeof::default()));
    ctx.register_udf(ScalarUDF::new_from_impl(crate::arrays::OrEmpty::default()));
    ctx.register_udf(ScalarUDF::new_from_impl(crate::to_char::ToChar::default()));
    crate::json::register(ctx);
    crate::extensions::register(ctx);
    math::register(ctx);
    text::register(ctx);
    binary::register(ctx);
    regex::register(ctx);
    datetime::register(ctx);
    ctx.register_udf(ScalarUDF::new_from_impl(Mode::default()));
    ctx.register_udf(ScalarUDF::new_from_impl(extract::Extract::new(true)));
    ctx.register_udf(ScalarUDF::new_from_impl(extract::Extract::new(false)));
    ctx.register_udf(ScalarUDF::new_from_impl(crate::arrays::ArrayLike::default()));
    ctx.register_udf(ScalarUDF::new_from_impl(crate::arrays::ArraySet::default()));
    for name in ["coalesce", "greatest", "least", "nullif"] {
        if let Ok(function) = datafusion::execution::FunctionRegistry::udf(ctx, name) {
            ctx.register_udf(crate::casts::UnknownLiteralArguments::wrap(&function));
        }
    }
    // After DataFusion's own planners, which keep `@>` and `||` of arrays.
    let _ = datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx.clone(),
        Arc::new(crate::json::JsonOperators),
    );
    let _ = datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx.clone(),
        Arc::new(crate::interval::IntervalArithmetic),
    );
    let _ = datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx.clone(),
        Arc::new(crate::casts::LiteralComparisons),
    );
    let _ = datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx.clone(),
        Arc::new(crate::params::UnknownOperands),
    );
}

/// `pg_backend_pid()`: the session's process ID, which the wire layer sets once it has
/// given the session its BackendKeyData.
pub fn register_backend_pid(ctx: &SessionContext, pid: i32) {
    ctx.register_udf(create_udf(
        "pg_backend_pid",
        vec![],
        DataType::Int32,
        Volatility::Stable,
        Arc::new(move |_args: &[ColumnarValue]| {
            Ok(ColumnarValue::Scalar(ScalarValue::Int32(Some(pid))))
        }),
    ));
}

/// The helper `pg_listening_channels()` unnests (see `srf`): the session's channels.
pub(crate) const LISTENING_CHANNELS: &str = "partita_listening_channels";

/// `pg_notify(channel, payload)`, `pg_notification_queue_usage()` and the helper of
/// `pg_listening_channels()`, over the session's `listener` (see `notify`).
pub(crate) fn register_notify(ctx: &SessionContext, listener: &Arc<crate::notify::Listener>) {
    let notifying = Arc::clone(listener);
    ctx.register_udf(RowFunction::lenient(
        "pg_notify",
        Signature::exact(vec![DataType::Utf8, DataType::Utf8], Volatility::Volatile),
        // PostgreSQL's void, whose text is empty.
        DataType::Utf8,
        move |args| {
            let text = |v: &ScalarValue| match v {
                ScalarValue::Utf8(Some(s)) => s.clone(),
                _ => String::new(),
            };
            notifying
                .notify(&text(&args[0]), &text(&args[1]))
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
            Ok(ScalarValue::Utf8(Some(String::new())))
        },
    ));
    let listening = Arc::clone(listener);
    let item = Arc::new(datafusion::arrow::datatypes::Field::new_list_field(
        DataType::Utf8,
        true,
    ));
    let list_type = DataType::List(Arc::clone(&item));
    ctx.register_udf(create_udf(
        LISTENING_CHANNELS,
        vec![],
        list_type,
        Volatility::Volatile,
        Arc::new(move |_args: &[ColumnarValue]| {
            let channels = listening.listening();
            let values = datafusion::arrow::array::StringArray::from(channels);
            let list = datafusion::arrow::array::ListArray::try_new(
                Arc::clone(&item),
                datafusion::arrow::buffer::OffsetBuffer::from_lengths([
                    datafusion::arrow::array::Array::len(&values),
                ]),
                Arc::new(values),
                None,
            )?;
            Ok(ColumnarValue::Scalar(ScalarValue::List(Arc::new(list))))
        }),
    ));
    // What the sessions' queues hold of their bound (see `notify`).
    let usage = Arc::clone(listener);
    ctx.register_udf(create_udf(
        "pg_notification_queue_usage",
        vec![],
        DataType::Float64,
        Volatility::Volatile,
        Arc::new(move |_args: &[ColumnarValue]| {
            Ok(ColumnarValue::Scalar(ScalarValue::Float64(Some(
                usage.queue_usage(),
            ))))
        }),
    ));
}

/// The function `percentile_cont(f) WITHIN GROUP (ORDER BY x)` is planned as, over the
/// sorted non-NULL values as double precision (`rewrite`): DataFusion's own rounds the
/// interpolation to six digits.
pub(crate) const PERCENTILE_CONT: &str = "partita_percentile_cont";

/// The function `mode() WITHIN GROUP (ORDER BY x)` is planned as, over the sorted non-NULL
/// values (`rewrite`).
pub(crate) const MODE: &str = "partita_mode";

/// `partita_mode(sorted list)`: the value of the longest run, the first of equally long
/// ones (PostgreSQL's choice: the first in the group's order).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Mode {
    signature: Signature,
}

impl Default for Mode {
    fn default() -> Self {
        Mode {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Mode {
    fn name(&self) -> &str {
        MODE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(DataType::List(item)) => Ok(item.data_type().clone()),
            other => plan_err!("{MODE} takes a list, not {other:?}"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray};
        let n = args.number_rows;
        let lists = args.args[0].to_array(n)?;
        let lists = lists.as_list::<i32>();
        let item_type = self.return_type(&[lists.data_type().clone()])?;
        let mut out = Vec::with_capacity(lists.len());
        for r in 0..lists.len() {
            if lists.is_null(r) {
                out.push(ScalarValue::try_from(&item_type)?);
                continue;
            }
            let values = lists.value(r);
            let (mut best, mut best_len, mut run_start) = (None, 0, 0);
            for i in 0..=values.len() {
                let run_ends = i == values.len()
                    || (i > run_start
                        && ScalarValue::try_from_array(&values, i)?
                            != ScalarValue::try_from_array(&values, run_start)?);
                if run_ends {
                    if i > run_start && i - run_start > best_len {
                        best_len = i - run_start;
                        best = Some(run_start);
                    }
                    run_start = i;
                }
            }
            out.push(match best {
                Some(i) => ScalarValue::try_from_array(&values, i)?,
                None => ScalarValue::try_from(&item_type)?,
            });
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(
                datafusion::arrow::array::new_empty_array(&item_type),
            ));
        }
        let array = ScalarValue::iter_to_array(out)?;
        if matches!(args.args[0], ColumnarValue::Scalar(_)) {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &array, 0,
            )?));
        }
        Ok(ColumnarValue::Array(array))
    }
}

/// `pg_typeof(x)`: the name of the argument's PostgreSQL type, from the type it was planned
/// with. (The analyzer gives it bare integer constants as `integer` and quoted ones as
/// `unknown`, as PostgreSQL types them.)
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgTypeof {
    signature: Signature,
}

impl Default for PgTypeof {
    fn default() -> Self {
        PgTypeof {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for PgTypeof {
    fn name(&self) -> &str {
        "pg_typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let field = &args.arg_fields[0];
        let oid = crate::pg_catalog::field_type_oid(field);
        let name = match sql::types::declared_type_name(field) {
            // An enum's values go as text, and its field names the type.
            Some(declared) if oid == 25 && declared != "text" => declared.to_string(),
            _ => crate::pg_catalog::format_type(i64::from(oid), None),
        };
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(name))))
    }
}

/// `length` and `octet_length` as PostgreSQL has them: of text in characters and bytes, of
/// bytea in bytes (DataFusion's take text only).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Length {
    name: &'static str,
    signature: Signature,
}

impl Length {
    fn new(name: &'static str) -> Length {
        Length {
            name,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    fn is_binary(t: &DataType) -> bool {
        matches!(
            t,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        )
    }

    /// DataFusion's function for text.
    fn text(&self) -> Arc<ScalarUDF> {
        match self.name {
            "octet_length" => datafusion::functions::string::octet_length(),
            _ => datafusion::functions::unicode::character_length(),
        }
    }
}

impl ScalarUDFImpl for Length {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] if Length::is_binary(t) => Ok(vec![DataType::Binary]),
            [t @ (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)] => {
                Ok(vec![t.clone()])
            }
            [_] => Ok(vec![DataType::Utf8]),
            _ => plan_err!("{} takes one argument", self.name),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [t] if Length::is_binary(t) => Ok(DataType::Int32),
            _ => self.text().return_type(arg_types),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if !Length::is_binary(args.arg_fields[0].data_type()) {
            return self.text().invoke_with_args(args);
        }
        let lengths = |a: &datafusion::arrow::array::ArrayRef| {
            datafusion::arrow::compute::kernels::length::length(a.as_ref())
        };
        match &args.args[0] {
            ColumnarValue::Array(a) => Ok(ColumnarValue::Array(lengths(a)?)),
            ColumnarValue::Scalar(v) => {
                let n = lengths(&v.to_array()?)?;
                Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&n, 0)?))
            }
        }
    }
}
