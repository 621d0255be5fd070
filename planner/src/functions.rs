//! Functions PostgreSQL clients expect that DataFusion lacks or names differently.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{AggregateUDF, ColumnarValue, ScalarUDF, Volatility, create_udf};
use std::sync::Arc;

/// Registers `version()`, `current_database()`, `current_schema()`, `pg_backend_pid()`,
/// `numeric(x)` and `avg` with PostgreSQL's numeric scale.
pub fn register(ctx: &SessionContext) {
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
        "current_database",
        ScalarValue::Utf8(Some("partita".into())),
    ));
    ctx.register_udf(constant(
        "current_schema",
        ScalarValue::Utf8(Some("public".into())),
    ));
    ctx.register_udf(constant(
        "pg_backend_pid",
        ScalarValue::Int32(Some(std::process::id() as i32)),
    ));
    let _ = DataType::Utf8;
    ctx.register_udaf(AggregateUDF::new_from_impl(crate::numeric::PgAvg::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(
        crate::numeric::ToNumeric::default(),
    ));
}
