//! Order-preserving encoding of composite keys of typed values.
//!
//! Invariant: for two tuples of the same column types and directions, the byte order of their
//! encodings equals the value order of the tuples, and `decode(encode(x)) = x` (numerics up to
//! numeric equality: 1.50 and 1.5 encode alike). Every component is self-delimiting and no
//! component encoding is a prefix of another of the same type, which is what makes a tuple
//! prefix a usable scan bound and lets DESC be a plain bitwise inversion.
//!
//! Per type (ascending):
//! - bool: one byte 0/1; integers, dates, timestamps: big-endian with the sign bit flipped;
//! - floats: IEEE bits, sign bit flipped for positives and all bits flipped for negatives,
//!   with −0.0 folded into 0.0 and every NaN folded into one NaN that sorts above +∞ (as in
//!   PostgreSQL);
//! - text and bytea: the bytes with 0x00 escaped as 0x00 0xFF, ended by 0x00 0x01, so
//!   'a' < 'a\0' < 'ab';
//! - numeric: a sign byte, then for non-zero values a biased decimal exponent and one byte per
//!   significant digit ended by 0x00, all inverted for negatives;
//! - uuid: its 16 bytes.
//!
//! NULL cannot be encoded: a key part is never NULL.

use crate::error::{Error, Result};
use crate::value::{Decimal, ScalarType, Value};
use std::cmp::Ordering;

/// Direction of one key column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortOrder {
    Asc,
    Desc,
}

impl SortOrder {
    fn mask(self) -> u8 {
        match self {
            SortOrder::Asc => 0x00,
            SortOrder::Desc => 0xFF,
        }
    }
}

/// The type and direction of one key column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyColumn {
    pub ty: ScalarType,
    pub order: SortOrder,
}

impl KeyColumn {
    pub fn asc(ty: ScalarType) -> KeyColumn {
        KeyColumn {
            ty,
            order: SortOrder::Asc,
        }
    }

    pub fn desc(ty: ScalarType) -> KeyColumn {
        KeyColumn {
            ty,
            order: SortOrder::Desc,
        }
    }
}

const NUMERIC_NEGATIVE: u8 = 0x01;
const NUMERIC_ZERO: u8 = 0x02;
const NUMERIC_POSITIVE: u8 = 0x03;

/// Appends the encoding of `value` as a key column of type `col.ty` in direction `col.order`.
pub fn encode_value(out: &mut Vec<u8>, value: &Value, col: KeyColumn) -> Result<()> {
    if !col.ty.is_keyable() {
        return Err(Error::UnsupportedKeyType { ty: col.ty });
    }
    let start = out.len();
    match (value, col.ty) {
        (Value::Null, _) => return Err(Error::NullKeyPart),
        (Value::Bool(v), ScalarType::Bool) => out.push(u8::from(*v)),
        (Value::Int2(v), ScalarType::Int2) => {
            out.extend_from_slice(&(*v as u16 ^ 0x8000).to_be_bytes())
        }
        (Value::Int4(v), ScalarType::Int4) | (Value::Date(v), ScalarType::Date) => {
            out.extend_from_slice(&(*v as u32 ^ 0x8000_0000).to_be_bytes())
        }
        (Value::Int8(v), ScalarType::Int8)
        | (Value::Timestamp(v), ScalarType::Timestamp)
        | (Value::TimestampTz(v), ScalarType::TimestampTz)
        | (Value::Time(v), ScalarType::Time) => {
            out.extend_from_slice(&(*v as u64 ^ 0x8000_0000_0000_0000).to_be_bytes())
        }
        (Value::Float4(v), ScalarType::Float4) => {
            out.extend_from_slice(&encode_f32(*v).to_be_bytes())
        }
        (Value::Float8(v), ScalarType::Float8) => {
            out.extend_from_slice(&encode_f64(*v).to_be_bytes())
        }
        (Value::Numeric(v), ScalarType::Numeric) => encode_decimal(out, *v),
        (Value::Text(v), ScalarType::Text) => encode_bytes(out, v.as_bytes()),
        (Value::Bytea(v), ScalarType::Bytea) => encode_bytes(out, v),
        (Value::Uuid(v), ScalarType::Uuid) => out.extend_from_slice(v),
        (value, ty) => {
            return Err(Error::KeyTypeMismatch {
                expected: ty,
                found: value.scalar_type(),
            });
        }
    }
    if col.order == SortOrder::Desc {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
    Ok(())
}

/// Appends the encoding of a tuple of values, one per column.
pub fn encode_key(out: &mut Vec<u8>, values: &[Value], cols: &[KeyColumn]) -> Result<()> {
    if values.len() > cols.len() {
        return Err(Error::Internal(format!(
            "key has {} values for {} columns",
            values.len(),
            cols.len()
        )));
    }
    for (value, col) in values.iter().zip(cols) {
        encode_value(out, value, *col)?;
    }
    Ok(())
}

/// Decodes one key column from the front of `input`, advancing it.
pub fn decode_value(input: &mut &[u8], col: KeyColumn) -> Result<Value> {
    let mask = col.order.mask();
    Ok(match col.ty {
        ScalarType::Bool => match take::<1>(input, mask)? {
            [0] => Value::Bool(false),
            [1] => Value::Bool(true),
            _ => return Err(corrupt("bool key byte")),
        },
        ScalarType::Int2 => Value::Int2((u16::from_be_bytes(take(input, mask)?) ^ 0x8000) as i16),
        ScalarType::Int4 => {
            Value::Int4((u32::from_be_bytes(take(input, mask)?) ^ 0x8000_0000) as i32)
        }
        ScalarType::Date => {
            Value::Date((u32::from_be_bytes(take(input, mask)?) ^ 0x8000_0000) as i32)
        }
        ScalarType::Int8 => Value::Int8(decode_i64(input, mask)?),
        ScalarType::Timestamp => Value::Timestamp(decode_i64(input, mask)?),
        ScalarType::TimestampTz => Value::TimestampTz(decode_i64(input, mask)?),
        ScalarType::Time => Value::Time(decode_i64(input, mask)?),
        ScalarType::Float4 => Value::Float4(decode_f32(u32::from_be_bytes(take(input, mask)?))),
        ScalarType::Float8 => Value::Float8(decode_f64(u64::from_be_bytes(take(input, mask)?))),
        ScalarType::Numeric => Value::Numeric(decode_decimal(input, mask)?),
        ScalarType::Text => {
            let bytes = decode_bytes(input, mask)?;
            Value::Text(String::from_utf8(bytes).map_err(|_| corrupt("text key is not UTF-8"))?)
        }
        ScalarType::Bytea => Value::Bytea(decode_bytes(input, mask)?),
        ScalarType::Uuid => Value::Uuid(take(input, mask)?),
        ScalarType::Json | ScalarType::Interval | ScalarType::Array => {
            return Err(Error::UnsupportedKeyType { ty: col.ty });
        }
    })
}

/// Decodes a tuple of key columns; `input` must hold exactly that many components.
pub fn decode_key(mut input: &[u8], cols: &[KeyColumn]) -> Result<Vec<Value>> {
    let mut values = Vec::with_capacity(cols.len());
    for col in cols {
        values.push(decode_value(&mut input, *col)?);
    }
    if !input.is_empty() {
        return Err(corrupt("trailing bytes after key"));
    }
    Ok(values)
}

/// Advances `input` past one encoded key column without materializing it.
pub fn skip_value(input: &mut &[u8], col: KeyColumn) -> Result<()> {
    let mask = col.order.mask();
    let fixed = match col.ty {
        ScalarType::Bool => 1,
        ScalarType::Int2 => 2,
        ScalarType::Int4 | ScalarType::Date | ScalarType::Float4 => 4,
        ScalarType::Int8
        | ScalarType::Timestamp
        | ScalarType::TimestampTz
        | ScalarType::Time
        | ScalarType::Float8 => 8,
        ScalarType::Uuid => 16,
        ScalarType::Numeric => {
            decode_decimal(input, mask)?;
            return Ok(());
        }
        ScalarType::Text | ScalarType::Bytea => {
            let end = escaped_end(input, mask)?;
            *input = &input[end..];
            return Ok(());
        }
        ScalarType::Json | ScalarType::Interval | ScalarType::Array => {
            return Err(Error::UnsupportedKeyType { ty: col.ty });
        }
    };
    if input.len() < fixed {
        return Err(corrupt("key ends inside a fixed-width column"));
    }
    *input = &input[fixed..];
    Ok(())
}

/// The smallest byte string greater than every string that starts with `prefix`, or `None` when
/// no such string exists (the prefix is all 0xFF): the exclusive upper bound of a prefix scan.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("key encoding: {what}"))
}

fn take<const N: usize>(input: &mut &[u8], mask: u8) -> Result<[u8; N]> {
    if input.len() < N {
        return Err(corrupt("key ends inside a fixed-width column"));
    }
    let mut out = [0u8; N];
    for (o, b) in out.iter_mut().zip(&input[..N]) {
        *o = b ^ mask;
    }
    *input = &input[N..];
    Ok(out)
}

fn decode_i64(input: &mut &[u8], mask: u8) -> Result<i64> {
    Ok((u64::from_be_bytes(take(input, mask)?) ^ 0x8000_0000_0000_0000) as i64)
}

fn encode_f64(v: f64) -> u64 {
    let v = if v.is_nan() {
        f64::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    };
    let bits = v.to_bits();
    if bits & 0x8000_0000_0000_0000 != 0 {
        !bits
    } else {
        bits ^ 0x8000_0000_0000_0000
    }
}

fn decode_f64(bits: u64) -> f64 {
    if bits & 0x8000_0000_0000_0000 != 0 {
        f64::from_bits(bits ^ 0x8000_0000_0000_0000)
    } else {
        f64::from_bits(!bits)
    }
}

fn encode_f32(v: f32) -> u32 {
    let v = if v.is_nan() {
        f32::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    };
    let bits = v.to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits ^ 0x8000_0000
    }
}

fn decode_f32(bits: u32) -> f32 {
    if bits & 0x8000_0000 != 0 {
        f32::from_bits(bits ^ 0x8000_0000)
    } else {
        f32::from_bits(!bits)
    }
}

fn encode_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        if b == 0x00 {
            out.extend_from_slice(&[0x00, 0xFF]);
        } else {
            out.push(b);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Index just past the terminator of an escaped byte string at the front of `input`.
fn escaped_end(input: &[u8], mask: u8) -> Result<usize> {
    let mut i = 0;
    while i < input.len() {
        if input[i] ^ mask == 0x00 {
            match input.get(i + 1).map(|b| b ^ mask) {
                Some(0x01) => return Ok(i + 2),
                Some(0xFF) => i += 2,
                _ => return Err(corrupt("bad escape in byte string")),
            }
        } else {
            i += 1;
        }
    }
    Err(corrupt("unterminated byte string"))
}

fn decode_bytes(input: &mut &[u8], mask: u8) -> Result<Vec<u8>> {
    let end = escaped_end(input, mask)?;
    let mut out = Vec::with_capacity(end - 2);
    let mut i = 0;
    while i < end - 2 {
        let b = input[i] ^ mask;
        out.push(b);
        i += if b == 0x00 { 2 } else { 1 };
    }
    *input = &input[end..];
    Ok(out)
}

/// Numeric as sign, exponent and digits: the value is 0.d1d2…dn × 10^exponent with d1 ≠ 0 and
/// dn ≠ 0. Positive: sign, exponent (i16, sign bit flipped), digits as 1..=10, then 0x00.
/// Negative: the same magnitude bytes inverted, so larger magnitudes sort first.
fn encode_decimal(out: &mut Vec<u8>, d: Decimal) {
    let d = d.normalized();
    if d.mantissa == 0 {
        out.push(NUMERIC_ZERO);
        return;
    }
    let digits = d.magnitude_digits();
    let digits = digits.trim_end_matches('0');
    let exponent = d.magnitude_digits().len() as i16 - d.scale as i16;
    let negative = d.mantissa < 0;
    out.push(if negative {
        NUMERIC_NEGATIVE
    } else {
        NUMERIC_POSITIVE
    });
    let start = out.len();
    out.extend_from_slice(&((exponent as u16) ^ 0x8000).to_be_bytes());
    out.extend(digits.bytes().map(|c| c - b'0' + 1));
    out.push(0x00);
    if negative {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

fn decode_decimal(input: &mut &[u8], mask: u8) -> Result<Decimal> {
    let [sign] = take::<1>(input, mask)?;
    let inner = match sign {
        NUMERIC_ZERO => return Ok(Decimal::new(0, 0)),
        NUMERIC_POSITIVE => mask,
        NUMERIC_NEGATIVE => !mask,
        _ => return Err(corrupt("numeric sign byte")),
    };
    let exponent = (u16::from_be_bytes(take(input, inner)?) ^ 0x8000) as i16 as i32;
    let mut mantissa: i128 = 0;
    let mut ndigits: i32 = 0;
    loop {
        let [b] = take::<1>(input, inner)?;
        if b == 0 {
            break;
        }
        if !(1..=10).contains(&b) {
            return Err(corrupt("numeric digit"));
        }
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(b - 1)))
            .ok_or_else(|| corrupt("numeric too wide"))?;
        ndigits += 1;
    }
    // value = mantissa × 10^(exponent − ndigits)
    let mut scale = ndigits - exponent;
    while scale < 0 {
        mantissa = mantissa
            .checked_mul(10)
            .ok_or_else(|| corrupt("numeric too wide"))?;
        scale += 1;
    }
    if scale > i32::from(crate::value::DECIMAL_MAX_SCALE) {
        return Err(corrupt("numeric scale"));
    }
    if sign == NUMERIC_NEGATIVE {
        mantissa = -mantissa;
    }
    Ok(Decimal::new(mantissa, scale as u8))
}

/// Orders decimals whose common-scale form overflows i128, by their key encodings.
pub(crate) fn compare_decimals_by_encoding(a: Decimal, b: Decimal) -> Ordering {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    encode_decimal(&mut x, a);
    encode_decimal(&mut y, b);
    x.cmp(&y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(values: &[Value], cols: &[KeyColumn]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key(&mut out, values, cols).unwrap();
        out
    }

    /// Value order as PostgreSQL defines it for one type (NaN above everything, −0 = 0,
    /// text by bytes).
    fn value_cmp(a: &Value, b: &Value) -> Ordering {
        match (a, b) {
            (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
            (Value::Int2(x), Value::Int2(y)) => x.cmp(y),
            (Value::Int4(x), Value::Int4(y)) | (Value::Date(x), Value::Date(y)) => x.cmp(y),
            (Value::Int8(x), Value::Int8(y))
            | (Value::Timestamp(x), Value::Timestamp(y))
            | (Value::TimestampTz(x), Value::TimestampTz(y))
            | (Value::Time(x), Value::Time(y)) => x.cmp(y),
            (Value::Float4(x), Value::Float4(y)) => float_cmp(f64::from(*x), f64::from(*y)),
            (Value::Float8(x), Value::Float8(y)) => float_cmp(*x, *y),
            (Value::Numeric(x), Value::Numeric(y)) => x.cmp(y),
            (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Value::Bytea(x), Value::Bytea(y)) => x.cmp(y),
            (Value::Uuid(x), Value::Uuid(y)) => x.cmp(y),
            _ => panic!("mixed types {a:?} {b:?}"),
        }
    }

    fn float_cmp(x: f64, y: f64) -> Ordering {
        match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(&y).unwrap(),
        }
    }

    fn tuple_cmp(a: &[Value], b: &[Value], cols: &[KeyColumn]) -> Ordering {
        for ((x, y), col) in a.iter().zip(b).zip(cols) {
            let o = value_cmp(x, y);
            let o = if col.order == SortOrder::Desc {
                o.reverse()
            } else {
                o
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    fn same_value(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Float4(x), Value::Float4(y)) => (x.is_nan() && y.is_nan()) || x == y,
            (Value::Float8(x), Value::Float8(y)) => (x.is_nan() && y.is_nan()) || x == y,
            _ => a == b,
        }
    }

    const TYPES: [ScalarType; 14] = [
        ScalarType::Bool,
        ScalarType::Int2,
        ScalarType::Int4,
        ScalarType::Int8,
        ScalarType::Float4,
        ScalarType::Float8,
        ScalarType::Numeric,
        ScalarType::Text,
        ScalarType::Bytea,
        ScalarType::Date,
        ScalarType::Timestamp,
        ScalarType::TimestampTz,
        ScalarType::Uuid,
        ScalarType::Time,
    ];

    fn arb_value(ty: ScalarType) -> BoxedStrategy<Value> {
        match ty {
            ScalarType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
            ScalarType::Int2 => any::<i16>().prop_map(Value::Int2).boxed(),
            ScalarType::Int4 => any::<i32>().prop_map(Value::Int4).boxed(),
            ScalarType::Int8 => any::<i64>().prop_map(Value::Int8).boxed(),
            ScalarType::Float4 => prop_oneof![
                any::<f32>(),
                Just(f32::NAN),
                Just(-0.0f32),
                Just(0.0f32),
                Just(f32::INFINITY),
                Just(f32::NEG_INFINITY)
            ]
            .prop_map(Value::Float4)
            .boxed(),
            ScalarType::Float8 => prop_oneof![
                any::<f64>(),
                Just(f64::NAN),
                Just(-0.0),
                Just(0.0),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                (-1000i32..1000).prop_map(|i| f64::from(i) / 8.0)
            ]
            .prop_map(Value::Float8)
            .boxed(),
            ScalarType::Numeric => prop_oneof![
                (any::<i64>(), 0u8..12).prop_map(|(m, s)| Decimal::new(i128::from(m), s)),
                (-1000i128..1000, 0u8..4).prop_map(|(m, s)| Decimal::new(m, s)),
                (any::<i128>(), 0u8..=38).prop_map(|(m, s)| Decimal::new(m / 10, s)),
            ]
            .prop_map(Value::Numeric)
            .boxed(),
            ScalarType::Text => prop_oneof![any::<String>(), "[a\\x00b]{0,4}".prop_map(|s| s),]
                .prop_map(Value::Text)
                .boxed(),
            ScalarType::Bytea => prop::collection::vec(
                prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()],
                0..6,
            )
            .prop_map(Value::Bytea)
            .boxed(),
            ScalarType::Date => any::<i32>().prop_map(Value::Date).boxed(),
            ScalarType::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
            ScalarType::TimestampTz => any::<i64>().prop_map(Value::TimestampTz).boxed(),
            ScalarType::Time => (0..86_400_000_001i64).prop_map(Value::Time).boxed(),
            ScalarType::Uuid => any::<[u8; 16]>().prop_map(Value::Uuid).boxed(),
            ScalarType::Json | ScalarType::Interval | ScalarType::Array => {
                unreachable!("{ty} is not keyable")
            }
        }
    }

    fn arb_cols() -> impl Strategy<Value = Vec<KeyColumn>> {
        prop::collection::vec(
            (prop::sample::select(TYPES.to_vec()), any::<bool>()).prop_map(|(ty, desc)| {
                KeyColumn {
                    ty,
                    order: if desc {
                        SortOrder::Desc
                    } else {
                        SortOrder::Asc
                    },
                }
            }),
            1..4,
        )
    }

    fn arb_tuples() -> impl Strategy<Value = (Vec<KeyColumn>, Vec<Value>, Vec<Value>)> {
        arb_cols().prop_flat_map(|cols| {
            let tuple = cols.iter().map(|c| arb_value(c.ty)).collect::<Vec<_>>();
            (Just(cols), tuple.clone(), tuple)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn byte_order_is_value_order((cols, a, b) in arb_tuples()) {
            let (ea, eb) = (enc(&a, &cols), enc(&b, &cols));
            prop_assert_eq!(ea.cmp(&eb), tuple_cmp(&a, &b, &cols), "{:?} vs {:?}", a, b);
        }

        #[test]
        fn decode_inverts_encode((cols, a, _b) in arb_tuples()) {
            let e = enc(&a, &cols);
            let back = decode_key(&e, &cols).unwrap();
            for (x, y) in a.iter().zip(&back) {
                // −0.0 folds into 0.0 and numerics normalize; both stay equal in value.
                prop_assert_eq!(value_cmp(x, y), Ordering::Equal, "{:?} -> {:?}", x, y);
            }
            let mut rest: &[u8] = &e;
            for col in &cols {
                skip_value(&mut rest, *col).unwrap();
            }
            prop_assert!(rest.is_empty());
        }

        #[test]
        fn tuple_prefix_bounds_its_extensions((cols, a, _b) in arb_tuples()) {
            // Every key extending a prefix lies in [prefix, prefix_successor(prefix)).
            let full = enc(&a, &cols);
            let prefix = enc(&a[..1], &cols[..1]);
            prop_assert!(full >= prefix);
            if let Some(succ) = prefix_successor(&prefix) {
                prop_assert!(full < succ);
            }
        }
    }

    #[test]
    fn text_prefixes_and_nul() {
        let col = [KeyColumn::asc(ScalarType::Text)];
        let a = enc(&[Value::Text("a".into())], &col);
        let a0 = enc(&[Value::Text("a\0".into())], &col);
        let ab = enc(&[Value::Text("ab".into())], &col);
        assert!(a < a0 && a0 < ab);
        let back = decode_key(&a0, &col).unwrap();
        assert!(same_value(&back[0], &Value::Text("a\0".into())));
    }

    #[test]
    fn float_special_values() {
        let col = [KeyColumn::asc(ScalarType::Float8)];
        let e = |v: f64| enc(&[Value::Float8(v)], &col);
        assert_eq!(e(-0.0), e(0.0));
        assert!(e(f64::NAN) > e(f64::INFINITY));
        assert_eq!(e(f64::NAN), e(-f64::NAN));
        assert!(e(f64::NEG_INFINITY) < e(-1e300));
    }

    #[test]
    fn numeric_scale_is_not_order() {
        let col = [KeyColumn::asc(ScalarType::Numeric)];
        let e = |m: i128, s: u8| enc(&[Value::Numeric(Decimal::new(m, s))], &col);
        assert_eq!(e(150, 2), e(15, 1));
        assert!(e(-2, 0) < e(-15, 1));
        assert!(e(-1, 3) < e(0, 0));
        assert!(e(1, 3) < e(1, 2));
        assert!(e(99, 0) < e(100, 0));
        assert_eq!(
            decode_key(&e(-12345, 3), &col).unwrap(),
            vec![Value::Numeric(Decimal::new(-12345, 3))]
        );
    }

    #[test]
    fn bad_keys_are_refused() {
        let mut out = Vec::new();
        let col = KeyColumn::asc(ScalarType::Int4);
        assert!(matches!(
            encode_value(&mut out, &Value::Null, col),
            Err(Error::NullKeyPart)
        ));
        assert!(matches!(
            encode_value(&mut out, &Value::Int8(1), col),
            Err(Error::KeyTypeMismatch { .. })
        ));
        assert!(matches!(
            encode_value(
                &mut out,
                &Value::Json("{}".into()),
                KeyColumn::asc(ScalarType::Json)
            ),
            Err(Error::UnsupportedKeyType { .. })
        ));
        assert!(out.is_empty());
        assert!(decode_key(&[0x80], &[col]).is_err());
    }

    #[test]
    fn successor_of_prefix() {
        assert_eq!(prefix_successor(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
    }
}
