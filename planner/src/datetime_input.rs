//! PostgreSQL's date and timestamp input beyond ISO 8601, for text constants cast to a date
//! or a timestamp (`'Jan 5 2024'::date`, `'today'::date`): Arrow's parser reads only ISO.
//!
//! - Special words: `today`, `tomorrow`, `yesterday`, `now` (evaluated when the statement
//!   runs, as PostgreSQL's are when the constant is read), `epoch`, and `infinity` and
//!   `-infinity`, which are PostgreSQL's values: the largest and smallest of the type.
//! - Month names and abbreviations in any order with day and year (`Jan 5 2024`, `5 January
//!   2024`, `January 5, 2024`), weekday names ignored (`Mon Jan 01 2024`), numeric dates in
//!   the DateStyle MDY order (`1/5/2024`, `01-05-24`) or year first (`2024/01/05`), and
//!   `YYYYMMDD`; a time after the date may have `AM`/`PM` and a zone.

/// What a special word stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// The current date plus this many days, at midnight.
    Today(i32),
    /// The transaction's start time.
    Now,
    /// `infinity` (true) or `-infinity`: later or earlier than every other value.
    Infinity(bool),
}

/// The special word `text` is, if it is one (`epoch` is read as its ISO text instead).
pub fn special(text: &str) -> Option<Special> {
    match text.trim().to_ascii_lowercase().as_str() {
        "today" => Some(Special::Today(0)),
        "tomorrow" => Some(Special::Today(1)),
        "yesterday" => Some(Special::Today(-1)),
        "now" => Some(Special::Now),
        "infinity" => Some(Special::Infinity(true)),
        "-infinity" => Some(Special::Infinity(false)),
        _ => None,
    }
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Whether `word` is `name` or an abbreviation PostgreSQL reads (its first three letters,
/// and `sept`, `tues`, `wednes`, `thur`, `thurs`).
fn named(word: &str, name: &str) -> bool {
    word == name
        || word == &name[..3]
        || matches!(
            (word, name),
            ("sept", "september")
                | ("tues", "tuesday")
                | ("wednes", "wednesday")
                | ("thur" | "thurs", "thursday")
        )
}

/// `text` rewritten in ISO 8601 (`2024-01-05[ 22:00:00[+02]]`), `None` when it already is
/// ISO or is not a form this reads (the cast then reports it).
pub fn iso_text(text: &str) -> Option<String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("epoch") {
        return Some("1970-01-01 00:00:00+00".into());
    }
    let bytes = text.as_bytes();
    let words_in = text
        .chars()
        .any(|c| c.is_ascii_alphabetic() && !matches!(c, 'T' | 'Z'));
    if bytes.len() >= 10
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && !words_in
    {
        return None;
    }
    let mut date: Vec<Part> = Vec::new();
    let mut time: Option<String> = None;
    let mut pm: Option<bool> = None;
    let mut zone = String::new();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    for word in words {
        let lower = word.to_ascii_lowercase();
        if time.is_none() && word.contains(':') {
            // A time, perhaps with a zone offset glued on (`10:00+02`).
            let first = word.chars().next().map_or(0, char::len_utf8);
            let end = word[first..]
                .find(['+', '-'])
                .map_or(word.len(), |i| i + first);
            time = Some(word[..end].to_string());
            zone = word[end..].to_string();
        } else if lower == "am" || lower == "pm" {
            pm = Some(lower == "pm");
        } else if time.is_some() && (word.starts_with(['+', '-']) || lower == "utc" || lower == "z")
        {
            zone = word.to_string();
        } else if lower.chars().all(|c| c.is_ascii_alphabetic()) {
            if WEEKDAYS.iter().any(|d| named(&lower, d)) {
                continue;
            }
            let month = MONTHS.iter().position(|m| named(&lower, m))?;
            date.push(Part::Month(month as u32 + 1));
        } else {
            // `2024-01-05`, `1/5/24`, and a month by name between them (`15-Jan-2024`).
            for piece in word.split(['-', '/', '.']) {
                let lower = piece.to_ascii_lowercase();
                if !lower.is_empty() && lower.chars().all(|c| c.is_ascii_alphabetic()) {
                    let month = MONTHS.iter().position(|m| named(&lower, m))?;
                    date.push(Part::Month(month as u32 + 1));
                    continue;
                }
                if piece.is_empty() || !piece.chars().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                date.push(Part::Number(piece.to_string()));
            }
        }
    }
    let (year, month, day) = ymd(&date)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut out = format!("{year:04}-{month:02}-{day:02}");
    if let Some(time) = time {
        let mut fields = time.splitn(3, ':');
        let mut hour: u32 = fields.next()?.parse().ok()?;
        let minute: u32 = fields.next()?.parse().ok()?;
        let second = fields.next().unwrap_or("00");
        match pm {
            Some(_) if hour == 0 || hour > 12 => return None,
            Some(true) if hour < 12 => hour += 12,
            Some(false) if hour == 12 => hour = 0,
            _ => {}
        }
        if hour > 23 || minute > 59 {
            return None;
        }
        out.push_str(&format!(" {hour:02}:{minute:02}:{second}"));
    }
    out.push_str(&zone);
    Some(out)
}

#[derive(Debug)]
enum Part {
    Month(u32),
    Number(String),
}

/// Year, month and day from a date's parts.
fn ymd(parts: &[Part]) -> Option<(i32, u32, u32)> {
    let year = |s: &str| -> Option<i32> {
        let n: i32 = s.parse().ok()?;
        // Two-digit years as PostgreSQL reads them: 70–99 in the 1900s, else the 2000s.
        Some(match s.len() {
            1 | 2 if n >= 70 => 1900 + n,
            1 | 2 => 2000 + n,
            _ => n,
        })
    };
    let num = |s: &str| s.parse::<u32>().ok();
    match parts {
        // `20240105`
        [Part::Number(n)] if n.len() == 8 => {
            Some((n[..4].parse().ok()?, num(&n[4..6])?, num(&n[6..])?))
        }
        [Part::Month(m), Part::Number(a), Part::Number(b)]
        | [Part::Number(a), Part::Month(m), Part::Number(b)] => {
            if a.len() >= 3 {
                Some((year(a)?, *m, num(b)?))
            } else {
                Some((year(b)?, *m, num(a)?))
            }
        }
        [Part::Number(y), Part::Number(a), Part::Month(m)] if y.len() >= 3 => {
            Some((year(y)?, *m, num(a)?))
        }
        [Part::Number(a), Part::Number(b), Part::Number(c)] => {
            if a.len() >= 3 {
                Some((year(a)?, num(b)?, num(c)?))
            } else {
                // DateStyle MDY.
                Some((year(c)?, num(a)?, num(b)?))
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_spellings_become_iso() {
        let iso = |t: &str| iso_text(t);
        assert_eq!(
            iso("Jan 1 2024 10:00").as_deref(),
            Some("2024-01-01 10:00:00")
        );
        assert_eq!(iso("January 5, 2024").as_deref(), Some("2024-01-05"));
        assert_eq!(iso("5 Jan 2024").as_deref(), Some("2024-01-05"));
        assert_eq!(iso("Mon Jan 01 2024").as_deref(), Some("2024-01-01"));
        assert_eq!(iso("20240105").as_deref(), Some("2024-01-05"));
        assert_eq!(iso("1/5/24").as_deref(), Some("2024-01-05"));
        assert_eq!(iso("2024/01/05").as_deref(), Some("2024-01-05"));
        assert_eq!(
            iso("Jan 5 2024 10:30:15.5 PM +02").as_deref(),
            Some("2024-01-05 22:30:15.5+02")
        );
        assert_eq!(
            iso("12:00 am Jan 5 2024").as_deref(),
            Some("2024-01-05 00:00:00")
        );
        assert_eq!(iso("epoch").as_deref(), Some("1970-01-01 00:00:00+00"));
        assert_eq!(iso("2024-01-05 10:00"), None);
        assert_eq!(
            iso("2024-01-05 10:00 PM").as_deref(),
            Some("2024-01-05 22:00:00")
        );
        assert_eq!(iso("Foo 5 2024"), None);
        assert_eq!(iso("13/45/2024"), None);
        assert_eq!(iso("Monkey Jan 5 2024"), None);
        assert_eq!(iso("Jan 5 2024 13:00 PM"), None);
        assert_eq!(iso("«10:00» Jan 5 2024"), None);
        assert_eq!(iso("Sept 5 2024").as_deref(), Some("2024-09-05"));
        assert_eq!(iso("15-Jan-2024").as_deref(), Some("2024-01-15"));
        assert_eq!(iso("2024-Jan-15").as_deref(), Some("2024-01-15"));
        assert_eq!(special("Today"), Some(Special::Today(0)));
        assert_eq!(special("now"), Some(Special::Now));
        assert_eq!(special(" Infinity"), Some(Special::Infinity(true)));
        assert_eq!(special("-infinity"), Some(Special::Infinity(false)));
    }
}
