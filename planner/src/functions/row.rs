//! Scalar functions computed a row at a time from `ScalarValue`s: for functions whose cost
//! is their own work (reading a template, matching a pattern, walking a calendar) rather
//! than the per-row dispatch, this keeps each one to what it computes.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// What a function computes from one row's arguments.
pub(crate) type Eval = dyn Fn(&[ScalarValue]) -> Result<ScalarValue> + Send + Sync;

pub(crate) struct RowFunction {
    name: &'static str,
    signature: Signature,
    returns: DataType,
    /// A NULL argument makes the result NULL without calling `eval` (PostgreSQL's STRICT).
    strict: bool,
    eval: Box<Eval>,
}

impl RowFunction {
    /// A strict function of `signature` returning `returns`.
    pub(crate) fn strict(
        name: &'static str,
        signature: Signature,
        returns: DataType,
        eval: impl Fn(&[ScalarValue]) -> Result<ScalarValue> + Send + Sync + 'static,
    ) -> ScalarUDF {
        RowFunction::udf(name, signature, returns, true, Box::new(eval))
    }

    /// A function that sees NULL arguments itself.
    pub(crate) fn lenient(
        name: &'static str,
        signature: Signature,
        returns: DataType,
        eval: impl Fn(&[ScalarValue]) -> Result<ScalarValue> + Send + Sync + 'static,
    ) -> ScalarUDF {
        RowFunction::udf(name, signature, returns, false, Box::new(eval))
    }

    fn udf(
        name: &'static str,
        signature: Signature,
        returns: DataType,
        strict: bool,
        eval: Box<Eval>,
    ) -> ScalarUDF {
        ScalarUDF::new_from_impl(RowFunction {
            name,
            signature,
            returns,
            strict,
            eval,
        })
    }

    fn call(&self, row: &[ScalarValue]) -> Result<ScalarValue> {
        if self.strict && row.iter().any(ScalarValue::is_null) {
            return ScalarValue::try_from(&self.returns);
        }
        let value = (self.eval)(row)?;
        if value.data_type() == self.returns || value.is_null() {
            return if value.is_null() {
                ScalarValue::try_from(&self.returns)
            } else {
                Ok(value)
            };
        }
        value.cast_to(&self.returns)
    }
}

impl std::fmt::Debug for RowFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowFunction")
            .field("name", &self.name)
            .finish()
    }
}

impl PartialEq for RowFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.signature == other.signature
    }
}

impl Eq for RowFunction {}

impl std::hash::Hash for RowFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for RowFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.returns.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalars: Option<Vec<ScalarValue>> = args
            .args
            .iter()
            .map(|a| match a {
                ColumnarValue::Scalar(s) => Some(s.clone()),
                ColumnarValue::Array(_) => None,
            })
            .collect();
        if let Some(row) = scalars
            && self.signature.volatility != Volatility::Volatile
        {
            return Ok(ColumnarValue::Scalar(self.call(&row)?));
        }
        let n = args.number_rows;
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(n))
            .collect::<Result<Vec<_>>>()?;
        let mut row = Vec::with_capacity(arrays.len());
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            row.clear();
            for a in &arrays {
                row.push(ScalarValue::try_from_array(a, i)?);
            }
            out.push(self.call(&row)?);
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(
                datafusion::arrow::array::new_empty_array(&self.returns),
            ));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

/// The value as an `i64`, for any integer type.
pub(crate) fn int(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Int8(x) => x.map(i64::from),
        ScalarValue::Int16(x) => x.map(i64::from),
        ScalarValue::Int32(x) => x.map(i64::from),
        ScalarValue::Int64(x) => *x,
        ScalarValue::UInt8(x) => x.map(i64::from),
        ScalarValue::UInt16(x) => x.map(i64::from),
        ScalarValue::UInt32(x) => x.map(i64::from),
        ScalarValue::UInt64(x) => x.and_then(|x| i64::try_from(x).ok()),
        _ => None,
    }
}

/// The value as text, for any string type.
pub(crate) fn text(v: &ScalarValue) -> Option<&str> {
    match v {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => s.as_deref(),
        _ => None,
    }
}
