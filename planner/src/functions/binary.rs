//! `encode(bytea, format)` and `decode(text, format)` as PostgreSQL has them, for the formats
//! `base64` (padded, a line break every 76 characters, blanks ignored when read), `hex` and
//! `escape`. DataFusion's own leave out base64's padding and have no `escape`.

use super::row::{RowFunction, text};
use crate::error::Error;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Signature, Volatility};

pub(super) fn register(ctx: &SessionContext) {
    ctx.register_udf(RowFunction::strict(
        "encode",
        Signature::any(2, Volatility::Immutable),
        DataType::Utf8,
        |args| {
            let encoded = match format(&args[1])? {
                Format::Base64 => base64_encode(bytes(&args[0])?),
                Format::Hex => hex_encode(bytes(&args[0])?),
                Format::Escape => escape_encode(bytes(&args[0])?),
            };
            Ok(ScalarValue::Utf8(Some(encoded)))
        },
    ));
    ctx.register_udf(RowFunction::strict(
        "decode",
        Signature::any(2, Volatility::Immutable),
        DataType::Binary,
        |args| {
            let input = text(&args[0]).ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "function decode({}, text) does not exist",
                    args[0].data_type()
                ))
            })?;
            let decoded = match format(&args[1])? {
                Format::Base64 => base64_decode(input),
                Format::Hex => hex_decode(input),
                Format::Escape => escape_decode(input),
            };
            decoded
                .map(|b| ScalarValue::Binary(Some(b)))
                .map_err(|e| DataFusionError::External(Box::new(e)))
        },
    ));
}

enum Format {
    Base64,
    Hex,
    Escape,
}

fn format(v: &ScalarValue) -> Result<Format> {
    let name = text(v).unwrap_or_default();
    match name.to_ascii_lowercase().as_str() {
        "base64" => Ok(Format::Base64),
        "hex" => Ok(Format::Hex),
        "escape" => Ok(Format::Escape),
        _ => Err(DataFusionError::External(Box::new(
            Error::InvalidParameterValue(format!("unrecognized encoding: \"{name}\"")),
        ))),
    }
}

/// The bytes of a bytea argument, or of text given where a bytea is taken.
fn bytes(v: &ScalarValue) -> Result<&[u8]> {
    match v {
        ScalarValue::Binary(Some(b))
        | ScalarValue::LargeBinary(Some(b))
        | ScalarValue::BinaryView(Some(b))
        | ScalarValue::FixedSizeBinary(_, Some(b)) => Ok(b),
        other => text(other).map(str::as_bytes).ok_or_else(|| {
            DataFusionError::Plan(format!(
                "function encode({}, text) does not exist",
                other.data_type()
            ))
        }),
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// PostgreSQL starts a new line after this many base64 characters.
const BASE64_LINE: usize = 76;

fn base64_encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4 + input.len() / 57);
    for (i, chunk) in input.chunks(3).enumerate() {
        if i > 0 && (i * 4).is_multiple_of(BASE64_LINE) {
            out.push('\n');
        }
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (k, b)| n | u32::from(*b) << (16 - 8 * k));
        for k in 0..4 {
            out.push(match k <= chunk.len() {
                true => BASE64[(n >> (18 - 6 * k) & 63) as usize] as char,
                false => '=',
            });
        }
    }
    out
}

/// Base64 text as PostgreSQL reads it: blanks skipped, each group of four characters three
/// bytes, the first `=` of a group at its third or fourth place ending the data (fewer bytes
/// from that group on).
fn base64_decode(input: &str) -> Result<Vec<u8>, Error> {
    let invalid = |m: String| Error::InvalidParameterValue(m);
    let mut out = Vec::with_capacity(input.len() / 4 * 3);
    // `bytes_kept` is how many bytes each group gives once `=` was seen.
    let (mut group, mut place, mut bytes_kept) = (0u32, 0, 3);
    for c in input.chars() {
        let value = match c {
            ' ' | '\t' | '\n' | '\r' => continue,
            '=' => {
                if bytes_kept == 3 {
                    bytes_kept = match place {
                        2 => 1,
                        3 => 2,
                        _ => {
                            return Err(invalid(
                                "unexpected \"=\" while decoding base64 sequence".into(),
                            ));
                        }
                    };
                }
                0
            }
            _ => BASE64.iter().position(|b| *b as char == c).ok_or_else(|| {
                invalid(format!(
                    "invalid symbol \"{c}\" found while decoding base64 sequence"
                ))
            })? as u32,
        };
        group = group << 6 | value;
        place += 1;
        if place == 4 {
            out.extend_from_slice(
                &[(group >> 16) as u8, (group >> 8) as u8, group as u8][..bytes_kept],
            );
            (group, place) = (0, 0);
        }
    }
    if place != 0 {
        return Err(invalid("invalid base64 end sequence".into()));
    }
    Ok(out)
}

fn hex_encode(input: &[u8]) -> String {
    input.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_decode(input: &str) -> Result<Vec<u8>, Error> {
    let invalid = |m: String| Error::InvalidParameterValue(m);
    let digit = |c: char| {
        c.to_digit(16)
            .ok_or_else(|| invalid(format!("invalid hexadecimal digit: \"{c}\"")))
    };
    let mut out = Vec::with_capacity(input.len() / 2);
    let mut chars = input
        .chars()
        .filter(|c| !matches!(c, ' ' | '\t' | '\n' | '\r'));
    while let Some(high) = chars.next() {
        let high = digit(high)?;
        let Some(low) = chars.next() else {
            return Err(invalid(
                "invalid hexadecimal data: odd number of digits".into(),
            ));
        };
        out.push((high << 4 | digit(low)?) as u8);
    }
    Ok(out)
}

/// Bytes as text: a NUL or a byte with its high bit set as `\ooo`, a backslash doubled.
fn escape_encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len());
    for b in input {
        match b {
            b'\\' => out.push_str("\\\\"),
            0 | 0x80.. => out.push_str(&format!("\\{b:03o}")),
            _ => out.push(*b as char),
        }
    }
    out
}

fn escape_decode(input: &str) -> Result<Vec<u8>, Error> {
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
        } else if bytes.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else {
            let octal = bytes.get(i + 1..i + 4).filter(|d| {
                matches!(d[0], b'0'..=b'3') && d[1..].iter().all(|c| matches!(c, b'0'..=b'7'))
            });
            let Some(d) = octal else {
                return Err(Error::InvalidText {
                    ty: "bytea".into(),
                    value: input.into(),
                });
            };
            out.push((d[0] - b'0') << 6 | (d[1] - b'0') << 3 | (d[2] - b'0'));
            i += 4;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_postgres() {
        assert_eq!(base64_encode(b"ab"), "YWI=");
        assert_eq!(base64_encode(b"abcd"), "YWJjZA==");
        assert_eq!(base64_encode(b"abc"), "YWJj");
        let long = base64_encode(&[0u8; 60]);
        assert_eq!(long.find('\n'), Some(76));
        for input in [&b""[..], b"a", b"ab", b"abc", b"abcd", &[0xff; 100]] {
            assert_eq!(base64_decode(&base64_encode(input)).unwrap(), input);
        }
        assert_eq!(base64_decode("YW\nI=").unwrap(), b"ab");
        assert!(base64_decode("YWI").is_err());
        assert!(base64_decode("Y===").is_err());
        assert!(base64_decode("Y*==").is_err());
    }

    #[test]
    fn hex_and_escape_round_trip() {
        assert_eq!(hex_decode("de AD").unwrap(), [0xde, 0xad]);
        assert!(hex_decode("abc").is_err());
        assert_eq!(escape_encode(b"a\\\0\xff"), "a\\\\\\000\\377");
        assert_eq!(escape_decode("a\\\\\\000\\377").unwrap(), b"a\\\0\xff");
        assert!(escape_decode("\\9").is_err());
    }
}
