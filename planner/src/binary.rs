//! PostgreSQL's binary format of values, read as the text a client could have sent instead:
//! for parameters a client binds in binary and for `COPY … FROM STDIN (FORMAT binary)`.
//! Types are named by OID, as the protocol names them.

/// The OIDs of the types read here.
pub mod oid {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const JSON: u32 = 114;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const DATE: u32 = 1082;
    pub const TIME: u32 = 1083;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const INTERVAL: u32 = 1186;
    pub const NUMERIC: u32 = 1700;
    pub const UUID: u32 = 2950;
    pub const JSONB: u32 = 3802;
}

/// Microseconds from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch).
const EPOCH_MICROS: i64 = 10_957 * 86_400_000_000;

/// The text form of a value of type `ty` given in binary; `Err` names what was wrong.
pub fn text(bytes: &[u8], ty: u32) -> Result<String, String> {
    let exactly = |n: usize| -> Result<&[u8], String> {
        match bytes.len() == n {
            true => Ok(bytes),
            false => Err("wrong length".into()),
        }
    };
    let be4 = |b: &[u8]| -> [u8; 4] { b.try_into().unwrap_or_default() };
    let be8 = |b: &[u8]| -> [u8; 8] { b.try_into().unwrap_or_default() };
    Ok(match ty {
        oid::BOOL => (if exactly(1)?[0] != 0 { "true" } else { "false" }).to_string(),
        oid::INT2 => i16::from_be_bytes([exactly(2)?[0], bytes[1]]).to_string(),
        oid::INT4 => i32::from_be_bytes(be4(exactly(4)?)).to_string(),
        oid::INT8 => i64::from_be_bytes(be8(exactly(8)?)).to_string(),
        oid::OID => u32::from_be_bytes(be4(exactly(4)?)).to_string(),
        oid::FLOAT4 => format!("{:?}", f32::from_be_bytes(be4(exactly(4)?))),
        oid::FLOAT8 => format!("{:?}", f64::from_be_bytes(be8(exactly(8)?))),
        oid::DATE => {
            // PostgreSQL's infinite dates are its extremes.
            let days = match i32::from_be_bytes(be4(exactly(4)?)) {
                i32::MAX => return Ok("infinity".into()),
                i32::MIN => return Ok("-infinity".into()),
                days => i64::from(days) + 10_957,
            };
            let (y, m, d) = crate::output::civil_from_days(days);
            format!("{y:04}-{m:02}-{d:02}")
        }
        oid::TIMESTAMP | oid::TIMESTAMPTZ => {
            let micros = match i64::from_be_bytes(be8(exactly(8)?)) {
                i64::MAX => return Ok("infinity".into()),
                i64::MIN => return Ok("-infinity".into()),
                micros => micros
                    .checked_add(EPOCH_MICROS)
                    .ok_or("timestamp out of range")?,
            };
            let days = micros.div_euclid(86_400_000_000);
            let (y, m, d) = crate::output::civil_from_days(days);
            // timestamptz values are UTC instants.
            let zone = if ty == oid::TIMESTAMPTZ { "+00" } else { "" };
            format!(
                "{y:04}-{m:02}-{d:02} {}{zone}",
                time_of_day(micros.rem_euclid(86_400_000_000))
            )
        }
        oid::TIME => {
            let micros = i64::from_be_bytes(be8(exactly(8)?));
            if !(0..=86_400_000_000).contains(&micros) {
                return Err("time out of range".into());
            }
            time_of_day(micros)
        }
        oid::INTERVAL => {
            let b = exactly(16)?;
            let micros = i64::from_be_bytes(be8(&b[..8]));
            let days = i32::from_be_bytes(be4(&b[8..12]));
            let months = i32::from_be_bytes(be4(&b[12..]));
            let sign = if micros < 0 { "-" } else { "" };
            let (whole, fraction) = (
                micros.unsigned_abs() / 1_000_000,
                micros.unsigned_abs() % 1_000_000,
            );
            format!("{months} mons {days} days {sign}{whole}.{fraction:06} seconds")
        }
        oid::UUID => {
            let u: [u8; 16] = exactly(16)?.try_into().map_err(|_| "uuid")?;
            crate::convert::format_uuid(&u)
        }
        oid::BYTEA => {
            let mut text = String::with_capacity(2 + bytes.len() * 2);
            text.push_str("\\x");
            for b in bytes {
                text.push_str(&format!("{b:02x}"));
            }
            text
        }
        oid::JSONB => match bytes.split_first() {
            Some((1, json)) => utf8(json)?,
            _ => return Err("unsupported jsonb version".into()),
        },
        oid::NUMERIC => numeric(bytes).ok_or("numeric")?,
        _ => match array_element(ty) {
            Some(element) => array(bytes, element).ok_or("array")??,
            None => utf8(bytes)?,
        },
    })
}

fn utf8(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "not UTF-8".into())
}

/// `HH:MM:SS.ffffff` of microseconds since midnight.
fn time_of_day(micros: i64) -> String {
    let s = micros / 1_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:06}",
        s / 3600,
        (s / 60) % 60,
        s % 60,
        micros % 1_000_000
    )
}

/// The element type of the array types drivers send.
fn array_element(ty: u32) -> Option<u32> {
    Some(match ty {
        199 => oid::JSON,
        1000 => oid::BOOL,
        1001 => oid::BYTEA,
        1005 => oid::INT2,
        1007 => oid::INT4,
        1009 => oid::TEXT,
        1014 => oid::BPCHAR,
        1015 => oid::VARCHAR,
        1016 => oid::INT8,
        1021 => oid::FLOAT4,
        1022 => oid::FLOAT8,
        1028 => oid::OID,
        1115 => oid::TIMESTAMP,
        1182 => oid::DATE,
        1185 => oid::TIMESTAMPTZ,
        1231 => oid::NUMERIC,
        2951 => oid::UUID,
        3807 => oid::JSONB,
        _ => return None,
    })
}

/// A one-dimensional array in binary format as its text form (`{1,NULL,"a b"}`), each
/// element read as a value of the element type. `None` when the bytes are not such an
/// array.
fn array(b: &[u8], element: u32) -> Option<Result<String, String>> {
    let int = |at: usize| Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let dimensions = int(0)?;
    let mut at = 12;
    let count = match dimensions {
        0 => 0,
        1 => {
            at += 8;
            int(12)?
        }
        _ => return None,
    };
    // The count is the client's word: no allocation is sized by it.
    let mut items = Vec::new();
    for _ in 0..count {
        let len = int(at)?;
        at += 4;
        if len < 0 {
            items.push("NULL".to_string());
            continue;
        }
        let bytes = b.get(at..at + len as usize)?;
        at += len as usize;
        let text = match text(bytes, element) {
            Ok(text) => text,
            Err(e) => return Some(Err(e)),
        };
        let quoted: String = text
            .chars()
            .flat_map(|c| match c {
                '"' | '\\' => vec!['\\', c],
                c => vec![c],
            })
            .collect();
        items.push(format!("\"{quoted}\""));
    }
    Some(Ok(format!("{{{}}}", items.join(","))))
}

/// PostgreSQL's binary numeric (ndigits, weight, sign, dscale, then base-10000 digits) as
/// text.
fn numeric(b: &[u8]) -> Option<String> {
    let word = |i: usize| -> Option<i16> {
        Some(i16::from_be_bytes(
            b.get(i * 2..i * 2 + 2)?.try_into().ok()?,
        ))
    };
    let (ndigits, weight, sign, dscale) = (word(0)?, word(1)?, word(2)? as u16, word(3)?);
    if sign == 0xC000 {
        return Some("NaN".into());
    }
    let digits: Vec<i16> = (0..ndigits as usize)
        .map(|i| word(4 + i))
        .collect::<Option<_>>()?;
    let mut int = String::new();
    let mut frac = String::new();
    for (i, d) in digits.iter().enumerate() {
        let pos = weight as i32 - i as i32;
        let group = format!("{d:04}");
        if pos >= 0 {
            int.push_str(&group);
        } else {
            while (frac.len() as i32) < (-pos - 1) * 4 {
                frac.push_str("0000");
            }
            frac.push_str(&group);
        }
    }
    if weight >= 0 {
        let have = digits.len() as i32;
        for _ in have..=weight as i32 {
            int.push_str("0000");
        }
    }
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let mut frac: String = frac.chars().take(dscale.max(0) as usize).collect();
    while (frac.len() as i16) < dscale {
        frac.push('0');
    }
    let sign = if sign == 0x4000 { "-" } else { "" };
    Some(if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    })
}
