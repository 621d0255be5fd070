//! The SQLSTATE and PostgreSQL's wording of every planner error: one exhaustive match from
//! error variants to SQLSTATE codes, so a new variant cannot silently become XX000, and the
//! messages DataFusion and Arrow raise classified and reworded as PostgreSQL says them. The
//! wire layer sends them; a DO block's EXCEPTION clause matches its conditions by them.

use crate::error::Error;
use datafusion::error::DataFusionError;

/// The SQLSTATE PostgreSQL would send for `e`.
pub fn sql_state(e: &Error) -> &str {
    match e {
        Error::Sql(e) => match e {
            sql::Error::UnknownTable(_) => "42P01",
            sql::Error::DuplicateTable(_) => "42P07",
            sql::Error::UnknownIndex(_) => "42704",
            sql::Error::UnknownColumn { .. } => "42703",
            sql::Error::DuplicateColumn(_) | sql::Error::ColumnExists { .. } => "42701",
            sql::Error::DuplicateObject(_) => "42710",
            sql::Error::UnknownType(_) => "42704",
            sql::Error::InvalidDefinition(_) => "42P16",
            sql::Error::InvalidParameter(_) => "22023",
            sql::Error::OutOfRange(_) => "22003",
            sql::Error::InvalidText(_) => "22P02",
            sql::Error::SequenceLimit(_) => "2200H",
            sql::Error::Unsupported(_) => "0A000",
            sql::Error::Syntax(_) => "42601",
            sql::Error::CorruptCatalog(_) => "XX001",
            sql::Error::Storage(e) => storage_state(e),
        },
        Error::Storage(e) => storage_state(e),
        Error::DataFusion(e) => datafusion_state(e),
        Error::Syntax(_) => "42601",
        Error::NotNull { .. } => "23502",
        Error::UniqueViolation { .. } | Error::DuplicateInNewIndex { .. } => "23505",
        Error::StringTooLong(_) => "22001",
        Error::NumericOverflow(_) | Error::FieldOverflow { .. } => "22003",
        // PostgreSQL's date and time input functions say 22007.
        Error::InvalidText { ty, .. } if ty.starts_with("date") || ty.starts_with("time") => {
            "22007"
        }
        Error::InvalidText { .. } | Error::MalformedArray(_) | Error::InvalidEnumValue { .. } => {
            "22P02"
        }
        Error::InFailedTransaction => "25P02",
        Error::ReadOnlyTransaction(_) => "25006",
        Error::ActiveTransaction(_) => "25001",
        Error::InvalidEncoding(_) => "22021",
        Error::CachedPlanChanged => "0A000",
        Error::SerializationFailure => "40001",
        Error::Unsupported(_) | Error::NotSupported { .. } => "0A000",
        Error::Grouping(_) => "42803",
        Error::Windowing(_) => "42P20",
        Error::InvalidRowCount(_) => "2201W",
        Error::CannotCoerce { .. } => "42804",
        Error::AmbiguousColumn(_) => "42702",
        Error::WrongObjectType(_) | Error::WrongObjectKind { .. } => "42809",
        Error::DependentObjects { .. } => "2BP01",
        Error::ForeignKeyViolation { .. } => "23503",
        Error::ForeignKeyTypes { .. } => "42804",
        Error::InvalidForeignKey(_) => "42830",
        Error::TooComplex(_) => "54001",
        Error::DuplicatePrepared(_) => "42P05",
        Error::UnknownPrepared(_) => "26000",
        Error::TruncateReferenced { .. } => "0A000",
        Error::UndefinedColumn(_) => "42703",
        Error::UnknownSetting(_) => "42704",
        Error::InvalidSettingValue { .. } | Error::BooleanSetting(_) => "22023",
        Error::UnknownCursor(_) => "34000",
        Error::DuplicateCursor(_) => "42P03",
        Error::NoTransaction(_) => "25P01",
        Error::SubqueryTooManyRows | Error::UpsertRowTwice => "21000",
        Error::NoConflictArbiter | Error::InvalidColumnReference(_) => "42P10",
        Error::UnknownConstraint { .. } => "42704",
        Error::DatatypeMismatch(_) => "42804",
        Error::NullsInColumn { .. } => "23502",
        Error::UndefinedObject(_) => "42704",
        Error::InvalidObjectDefinition(_) => "42P17",
        Error::DuplicateSchema(_) => "42P06",
        Error::UnknownSchema(_) => "3F000",
        Error::CantChangeSetting(_) => "55P02",
        Error::UnknownView(_) => "42P01",
        Error::UnknownSequence(_) => "42P01",
        Error::RequiredObject { .. } => "2BP01",
        Error::InvalidStatement(_) => "42601",
        Error::CheckViolation { .. } | Error::CheckViolatedByRow { .. } => "23514",
        Error::Canceled | Error::StatementTimeout => "57014",
        Error::Deadlock => "40P01",
        Error::DuplicateWithName(_) => "42712",
        Error::WithColumnCount { .. } => "42P10",
        Error::LockTimeout => "55P03",
        Error::ScanClassNotAllowed { .. } | Error::ProgramLimit(_) => "54000",
        Error::BadCopyData(_) => "22P04",
        Error::InvalidName(_) => "42602",
        Error::NoSuchFile(_) => "58P01",
        Error::ObjectStore(_) => "58030",
        Error::UnknownSavepoint(_) => "3B001",
        Error::UndefinedOperator(_) | Error::UndefinedFunction(_) => "42883",
        Error::InvalidParameterValue(_) => "22023",
        Error::InvalidWidthBucket(_) => "2201G",
        Error::InvalidLogarithmArgument(_) => "2201E",
        Error::InvalidPowerArgument(_) => "2201F",
        Error::InvalidRegex(_) => "2201B",
        Error::InvalidDatetimeFormat(_) => "22007",
        Error::DatetimeOutOfRange(_) => "22008",
        Error::NullValueNotAllowed(_) => "22004",
        Error::GeneratedAlways { .. } => "428C9",
        Error::InvalidEscape(_) => "22025",
        Error::NotInPrerequisiteState(_) => "55000",
        Error::Raised { code, .. } => code,
        Error::Context { source, .. } | Error::At { source, .. } => sql_state(source),
        Error::Internal(_) => "XX000",
    }
}

fn storage_state(e: &storage::Error) -> &'static str {
    match e {
        storage::Error::NullKeyPart => "23502",
        storage::Error::UnsupportedKeyType { .. } => "0A000",
        storage::Error::KeyTypeMismatch { .. } => "42804",
        storage::Error::KeyTooLarge { .. } => "54000",
        storage::Error::Conflict => "40001",
        storage::Error::UnknownKeyspace { .. } => "40001",
        storage::Error::Poisoned => "58030",
        storage::Error::TransactionClosed => "25000",
        storage::Error::Corrupt(_) => "XX001",
        storage::Error::Engine(_) | storage::Error::Io(_) => "58030",
        storage::Error::Internal(_) => "XX000",
    }
}

/// DataFusion reports most user errors as plan or execution errors with a message; the
/// message decides the class.
fn datafusion_state(e: &DataFusionError) -> &str {
    match e {
        DataFusionError::SQL(..) => "42601",
        DataFusionError::External(inner) => {
            if let Some(e) = inner.downcast_ref::<storage::Error>() {
                return storage_state(e);
            }
            if let Some(e) = inner.downcast_ref::<Error>() {
                return sql_state(e);
            }
            message_state(&inner.to_string())
        }
        DataFusionError::Context(_, inner) => datafusion_state(inner),
        DataFusionError::ArrowError(inner, _) => message_state(&inner.to_string()),
        DataFusionError::Shared(inner) => datafusion_state(inner),
        DataFusionError::NotImplemented(m) if unknown_type(m).is_some() => "42704",
        DataFusionError::NotImplemented(_) => "0A000",
        DataFusionError::ResourcesExhausted(_) => "53200",
        other => message_state(&other.to_string()),
    }
}

/// DataFusion's errors for a function given an argument it cannot take, by a part of their
/// text, with PostgreSQL's SQLSTATE and wording for them.
const FUNCTION_ARGUMENTS: &[(&str, &str, &str)] = &[
    (
        "negative count not allowed",
        "22011",
        "negative substring length not allowed",
    ),
    (
        "Step cannot be zero",
        "22023",
        "step size cannot equal zero",
    ),
    (
        "NTILE requires a positive integer",
        "22014",
        "argument of ntile must be greater than zero",
    ),
    (
        "field position must not be zero",
        "22023",
        "field position must not be zero",
    ),
];

/// DataFusion's errors for a query PostgreSQL refuses as it is written, likewise.
const QUERY_SHAPES: &[(&str, &str, &str)] = &[
    (
        "In an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
        "42P10",
        "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
    ),
    (
        "to grouping function is not in grouping columns",
        "42803",
        "arguments to GROUPING must be grouping expressions of the associated query level",
    ),
];

fn function_argument(m: &str) -> Option<(&'static str, &'static str)> {
    FUNCTION_ARGUMENTS
        .iter()
        .chain(QUERY_SHAPES)
        .find(|(text, ..)| m.contains(text))
        .map(|(_, code, message)| (*code, *message))
}

/// The regex crate's refusal of a pattern ("regex parse error: … error: unclosed group"),
/// which `~` and `SIMILAR TO` meet while they run: PostgreSQL's "invalid regular expression".
fn regex_error(m: &str) -> Option<String> {
    let (_, rest) = m.split_once("regex parse error:")?;
    let reason = rest
        .lines()
        .find_map(|line| line.trim().strip_prefix("error: "))
        .unwrap_or("not a regular expression");
    Some(format!("invalid regular expression: {reason}"))
}

/// A window function called without OVER ("Invalid function 'rank'", as DataFusion knows
/// it only as a window function): its name.
/// DataFusion's "Placeholder '$1' was not provided a value for execution": a statement run
/// without the parameter it names, PostgreSQL's "there is no parameter $1" (42P02).
fn unbound_parameter(m: &str) -> Option<&str> {
    let (_, rest) = m.split_once("Placeholder '")?;
    let (name, rest) = rest.split_once('\'')?;
    rest.starts_with(" was not provided a value")
        .then_some(name)
}

fn window_only(m: &str) -> Option<&'static str> {
    const WINDOW_ONLY: &[&str] = &[
        "row_number",
        "rank",
        "dense_rank",
        "percent_rank",
        "cume_dist",
        "ntile",
        "lag",
        "lead",
        "first_value",
        "last_value",
        "nth_value",
    ];
    let (_, rest) = m.split_once("Invalid function '")?;
    let name = rest.split('\'').next()?;
    WINDOW_ONLY.iter().copied().find(|w| *w == name)
}

/// DataFusion's `make_date` of a day that does not exist ("Unable to parse date from 2024,
/// 2, 30"): PostgreSQL's "date field value out of range: 2024-02-30".
fn made_date(m: &str) -> Option<String> {
    let (_, fields) = m.split_once("Unable to parse date from ")?;
    let fields: Vec<i64> = fields
        .lines()
        .next()?
        .split(", ")
        .map(|f| f.trim().parse().ok())
        .collect::<Option<_>>()?;
    let [year, month, day] = fields[..] else {
        return None;
    };
    Some(format!(
        "date field value out of range: {year:04}-{month:02}-{day:02}"
    ))
}

fn message_state(m: &str) -> &'static str {
    if let Some((code, _)) = function_argument(m) {
        return code;
    }
    if made_date(m).is_some() {
        return "22008";
    }
    if window_only(m).is_some() {
        return "42809";
    }
    if unbound_parameter(m).is_some() {
        return "42P02";
    }
    if regex_error(m).is_some() {
        return "2201B";
    }
    if m.contains("Invalid window frame") {
        return "42P20";
    }
    if m.contains("does not support logical expression OuterReferenceColumn") {
        return "0A000";
    }
    if let Some(failure) = CastFailure::parse(m) {
        return failure.state();
    }
    if let Some((_, out_of_range)) = timestamp_text(m) {
        return if out_of_range { "22008" } else { "22007" };
    }
    if integer_overflow(m).is_some() {
        return "22003";
    }
    let lower = m.to_ascii_lowercase();
    if lower.contains("for select distinct, order by expressions") {
        return "42P10";
    }
    match negative_limit(m) {
        Some("LIMIT") => return "2201W",
        Some(_) => return "2201X",
        None => {}
    }
    if ungrouped_column(m).is_some() {
        return "42803";
    }
    if lower.contains("divide by zero") || lower.contains("division by zero") {
        "22012"
    } else if lower.contains("subquery returned more than one row") {
        "21000"
    } else if lower.contains("invalid qualifier") {
        // `t.*` naming no FROM item: PostgreSQL's "missing FROM-clause entry".
        "42P01"
    } else if lower.contains("table")
        && (lower.contains("not found")
            || lower.contains("doesn't exist")
            || lower.contains("does not exist"))
    {
        "42P01"
    } else if lower.contains("no field named")
        || lower.contains("cannot access field")
        || lower.contains("schema error: no field")
        || lower.contains("column") && lower.contains("not found")
    {
        "42703"
    } else if lower.contains("ambiguous reference") {
        "42702"
    } else if lower.contains("overflow")
        || lower.contains("out of range")
        || lower.contains("too large to store")
    {
        "22003"
    } else if lower.contains("cannot cast")
        || lower.contains("cast error")
        || lower.contains("invalid") && lower.contains("syntax")
        || lower.contains("parser error")
        || lower.contains("error parsing")
    {
        "22P02"
    } else if lower.contains("invalid function")
        || lower.contains("no function matches")
        || lower.contains("function") && lower.contains("not found")
    {
        "42883"
    } else if lower.contains("sql error")
        || lower.contains("syntax error")
        || lower.contains("expected")
    {
        "42601"
    } else if lower.contains("not supported")
        || lower.contains("unsupported")
        || lower.contains("not implemented")
    {
        "0A000"
    } else if lower.contains("cannot be cast")
        || lower.contains("coercion")
        || lower.contains("type mismatch")
        || lower.contains("does not support")
    {
        "42804"
    } else if lower.contains("schema error") || lower.contains("error during planning") {
        "42000"
    } else {
        "XX000"
    }
}

/// Which clause DataFusion found negative: "LIMIT must be >= 0, '-1' was provided" (and
/// "OFFSET must be >=0") are PostgreSQL's 2201W and 2201X.
fn negative_limit(m: &str) -> Option<&'static str> {
    if m.contains("LIMIT must be >=") {
        Some("LIMIT")
    } else if m.contains("OFFSET must be >=") {
        Some("OFFSET")
    } else {
        None
    }
}

/// The column DataFusion found neither grouped nor aggregated: 'column "t.x" must appear in
/// the GROUP BY clause or must be part of an aggregate function' (PostgreSQL's 42803).
fn ungrouped_column(m: &str) -> Option<&str> {
    let (before, _) = m.split_once("\" must appear in the GROUP BY clause")?;
    before.rsplit_once("column \"").map(|(_, column)| column)
}

/// Strips DataFusion's "Error during planning: " style prefixes from user-facing messages.
pub fn message(e: &Error) -> String {
    // A message a DO block raised is the user's own text.
    if let Error::Raised { message, .. } = e {
        return message.clone();
    }
    // A planner error raised inside DataFusion (an analyzer rule's, say) speaks for itself,
    // without the contexts DataFusion wrapped around it.
    let text = innermost(e).to_string();
    if let Some(clause) = negative_limit(&text) {
        return format!("{clause} must not be negative");
    }
    if let Some(column) = ungrouped_column(&text) {
        return format!(
            "column \"{column}\" must appear in the GROUP BY clause or be used in an aggregate function"
        );
    }
    let mut t = text.as_str();
    // The prefixes nest in any order ("External error: Arrow error: Cast error: …").
    let prefixes = [
        "Error during planning: ",
        "Execution error: ",
        "Arrow error: ",
        "External error: ",
        "Schema error: ",
        "SQL error: ",
        "This feature is not implemented: ",
        "Optimizer rule 'simplify_expressions' failed\ncaused by\n",
        "Invalid argument error: ",
        "Cast error: ",
    ];
    while let Some(rest) = prefixes.iter().find_map(|p| t.strip_prefix(p)) {
        t = rest;
    }
    postgres_wording(t).unwrap_or_else(|| t.to_string())
}

/// Arrow's failure to cast a text value ("Cannot cast string 'x' to value of Int32 type",
/// "Cannot cast value 'maybe' to value of Boolean type"), with the PostgreSQL type it was for.
struct CastFailure<'a> {
    value: &'a str,
    ty: &'static str,
}

impl<'a> CastFailure<'a> {
    fn parse(m: &'a str) -> Option<Self> {
        let mut line = m.lines().next().unwrap_or(m);
        while let Some((_, rest)) = line.split_once("error: ") {
            line = rest;
        }
        let rest = line
            .strip_prefix("Cannot cast string '")
            .or_else(|| line.strip_prefix("Cannot cast value '"))?;
        let (value, ty) = rest.rsplit_once("' to value of ")?;
        let ty = match ty.trim_end_matches('.').trim_end_matches(" type") {
            "Int16" => "smallint",
            "Int32" => "integer",
            "Int64" => "bigint",
            "Float32" => "real",
            "Float64" => "double precision",
            "Boolean" => "boolean",
            t if t.starts_with("Decimal") => "numeric",
            t if t.starts_with("Date") => "date",
            t if t.starts_with("Timestamp") => "timestamp",
            t if t.starts_with("Time64") => "time",
            _ => return None,
        };
        Some(CastFailure { value, ty })
    }

    /// An integer literal that does not fit its type is out of range, not bad syntax.
    fn out_of_range(&self) -> bool {
        matches!(self.ty, "smallint" | "integer" | "bigint")
            && self.value.trim().parse::<i128>().is_ok()
    }

    /// Date text of numbers alone that does not read ('2021-02-30', '2021-13-01') names a
    /// day that does not exist: PostgreSQL's "field value out of range" (22008), not bad
    /// syntax.
    fn field_out_of_range(&self) -> bool {
        matches!(self.ty, "date" | "timestamp" | "time")
            && self.value.chars().any(|c| c.is_ascii_digit())
            && self
                .value
                .chars()
                .all(|c| c.is_ascii_digit() || "-/:. ".contains(c))
    }

    fn state(&self) -> &'static str {
        if self.out_of_range() {
            "22003"
        } else if self.field_out_of_range() {
            "22008"
        } else if matches!(self.ty, "date" | "timestamp" | "time") {
            "22007"
        } else {
            "22P02"
        }
    }

    fn message(&self) -> String {
        if self.field_out_of_range() {
            return format!("date/time field value out of range: \"{}\"", self.value);
        }
        if self.out_of_range() {
            format!(
                "value \"{}\" is out of range for type {}",
                self.value.trim(),
                self.ty
            )
        } else {
            format!(
                "invalid input syntax for type {}: \"{}\"",
                self.ty, self.value
            )
        }
    }
}

/// Arrow's failure to read timestamp text ("Parser error: Error parsing timestamp from
/// 'garbage': timestamp must contain at least 10 characters"): the text, and whether it was
/// a date out of range (PostgreSQL's 22008) rather than bad syntax (22007).
fn timestamp_text(m: &str) -> Option<(&str, bool)> {
    let (_, rest) = m.split_once("Error parsing timestamp from '")?;
    let (text, reason) = rest.rsplit_once("': ")?;
    let out_of_range = reason.starts_with("error parsing date")
        || reason.starts_with("error parsing time")
        || reason.contains("out of range");
    Some((text, out_of_range))
}

/// Arrow's failure to fit a number to a decimal type ("123.00 is too large to store in a
/// Decimal128 of precision 4. Max is 99.99"): PostgreSQL's "numeric field overflow".
/// The field's precision and scale are those of the DETAIL.
pub fn decimal_overflow(m: &str) -> Option<(u8, u8)> {
    let (_, rest) = m.lines().find_map(|line| {
        line.split_once(" is too large to store in a Decimal128 of precision ")
            .or_else(|| line.split_once(" is too small to store in a Decimal128 of precision "))
    })?;
    let (precision, max) = rest
        .split_once(". Max is ")
        .or_else(|| rest.split_once(". Min is "))?;
    let precision: u8 = precision.trim().parse().ok()?;
    let scale = max
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len() as u8);
    Some((precision, scale))
}

/// Arrow's failure to narrow a number to an integer type ("Can't cast value 2147483648 to
/// type Int32", "value of 1e20 is out of range Int64"): PostgreSQL's "integer out of range".
fn integer_overflow(m: &str) -> Option<String> {
    let mut line = m.lines().next().unwrap_or(m);
    while let Some((_, rest)) = line.split_once("error: ") {
        line = rest;
    }
    let ty = if let Some(rest) = line.strip_prefix("Can't cast value ") {
        rest.rsplit_once(" to type ")?.1
    } else {
        let rest = line.strip_prefix("value of ")?;
        rest.rsplit_once(" is out of range ")?.1
    };
    let name = match ty.trim_end_matches('.') {
        "Int16" | "UInt16" => "smallint",
        "Int32" | "UInt32" => "integer",
        "Int64" | "UInt64" => "bigint",
        _ => return None,
    };
    Some(format!("{name} out of range"))
}

/// `call` with each Arrow `Struct(…)` type named as PostgreSQL names a row's: `record`.
fn records_named(call: &str) -> String {
    let mut out = String::with_capacity(call.len());
    let mut rest = call;
    while let Some(at) = rest.find("Struct(") {
        out.push_str(&rest[..at]);
        let mut depth = 0;
        let end = rest[at..].char_indices().find_map(|(i, c)| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => return None,
            }
            (depth == 0).then_some(at + i + 1)
        });
        let Some(end) = end else {
            out.push_str(&rest[at..]);
            return out;
        };
        out.push_str("record");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The name in DataFusion's "Unsupported SQL type x" when x is no type of PostgreSQL's
/// (42704 there), not one Partita lacks (0A000).
fn unknown_type(m: &str) -> Option<&str> {
    const POSTGRES_TYPES: &[&str] = &[
        "point",
        "line",
        "lseg",
        "box",
        "path",
        "polygon",
        "circle",
        "cidr",
        "inet",
        "macaddr",
        "macaddr8",
        "money",
        "bit",
        "varbit",
        "tsvector",
        "tsquery",
        "xml",
        "txid_snapshot",
        "pg_snapshot",
        "pg_lsn",
        "int4range",
        "int8range",
        "numrange",
        "tsrange",
        "tstzrange",
        "daterange",
        "int4multirange",
        "int8multirange",
        "nummultirange",
        "tsmultirange",
        "tstzmultirange",
        "datemultirange",
        "timetz",
        "name",
        "oid",
        "xid",
        "cid",
        "tid",
        "regproc",
        "regprocedure",
        "regoper",
        "regoperator",
        "regconfig",
        "regdictionary",
        "regnamespace",
        "regrole",
        "regcollation",
        "aclitem",
        "jsonpath",
        "record",
        "void",
        "trigger",
        "anyelement",
        "anyarray",
        "refcursor",
        "citext",
        "hstore",
        "ltree",
        "cube",
        "geometry",
        "geography",
        "vector",
    ];
    let name = m
        .lines()
        .next()?
        .strip_prefix("Unsupported SQL type ")?
        .trim();
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '"');
    let bare = name
        .rsplit('.')
        .next()?
        .trim_matches('"')
        .to_ascii_lowercase();
    (plain && !POSTGRES_TYPES.contains(&bare.as_str())).then_some(name)
}

/// PostgreSQL's wording for the DataFusion and parser messages users meet most.
fn postgres_wording(m: &str) -> Option<String> {
    if let Some(name) = unknown_type(m) {
        return Some(format!(
            "type \"{}\" does not exist",
            name.trim_matches('"')
        ));
    }
    if let Some((_, message)) = function_argument(m) {
        return Some(message.into());
    }
    if let Some(message) = made_date(m).or_else(|| regex_error(m)) {
        return Some(message);
    }
    // A call no signature takes: DataFusion calls it an internal error and lists its tries.
    if let Some((_, call)) = m.split_once("No function matches the given name and argument types '")
        && let Some((call, _)) = call.split_once("'.")
    {
        return Some(format!("function {} does not exist", records_named(call)));
    }
    if let Some((text, out_of_range)) = timestamp_text(m) {
        return Some(match out_of_range {
            true => format!("date/time field value out of range: \"{text}\""),
            false => format!("invalid input syntax for type timestamp: \"{text}\""),
        });
    }
    let first_line = m.lines().next().unwrap_or(m).trim_end_matches('.');
    let unquote = |s: &str| s.trim().trim_matches('"').trim_matches('\'').to_string();
    if let Some(rest) = first_line.strip_prefix("table '")
        && let Some(name) = rest.strip_suffix("' not found")
    {
        let name = name.rsplit('.').next().unwrap_or(name);
        return Some(format!("relation \"{name}\" does not exist"));
    }
    if let Some(field) = first_line.strip_prefix("No field named ") {
        // "No field named x. Did you mean 't.y'?": the name ends at the sentence.
        let field = unquote(field.split(". ").next().unwrap_or(field));
        return Some(match field.split_once('.') {
            Some((table, column)) => format!(
                "column {}.{} does not exist",
                unquote(table),
                unquote(column)
            ),
            None => format!("column \"{field}\" does not exist"),
        });
    }
    if let Some(field) = first_line.strip_prefix("Ambiguous reference to unqualified field ") {
        return Some(format!(
            "column reference \"{}\" is ambiguous",
            unquote(field)
        ));
    }
    if let Some(name) = window_only(m) {
        return Some(format!("window function {name} requires an OVER clause"));
    }
    if let Some(name) = unbound_parameter(m) {
        return Some(format!("there is no parameter {name}"));
    }
    if let Some(name) = first_line.strip_prefix("Invalid function ") {
        return Some(format!("function {} does not exist", unquote(name)));
    }
    if let Some(failure) = CastFailure::parse(m) {
        return Some(failure.message());
    }
    if let Some(message) = integer_overflow(m) {
        return Some(message);
    }
    if decimal_overflow(first_line).is_some() {
        return Some("numeric field overflow".into());
    }
    if first_line.contains("does not support logical expression OuterReferenceColumn") {
        return Some(
            "a reference to another FROM item's column that Partita cannot run here (a LATERAL \
             subquery over an earlier item is not supported)"
                .into(),
        );
    }
    if first_line == "Divide by zero error" {
        return Some("division by zero".into());
    }
    if first_line == "Scalar subquery returned more than one row" {
        return Some(Error::SubqueryTooManyRows.to_string());
    }
    if let Some(parser) = m.strip_prefix("syntax error: sql parser error: ") {
        let found = parser.rsplit_once("found: ").map(|(_, f)| f);
        return Some(match found {
            Some("EOF") | None => "syntax error at end of input".into(),
            Some(token) => {
                let token = token.split(" at Line").next().unwrap_or(token);
                format!("syntax error at or near \"{}\"", unquote(token))
            }
        });
    }
    None
}

/// PostgreSQL's condition names (its `errcodes.txt`) with their SQLSTATEs, for a DO
/// block's `EXCEPTION WHEN name` and `RAISE name` / `USING ERRCODE = 'name'`. A code ending
/// in `000` names its whole class.
const CONDITIONS: &[(&str, &str)] = &[
    ("warning", "01000"),
    ("dynamic_result_sets_returned", "0100C"),
    ("implicit_zero_bit_padding", "01008"),
    ("null_value_eliminated_in_set_function", "01003"),
    ("privilege_not_granted", "01007"),
    ("privilege_not_revoked", "01006"),
    ("deprecated_feature", "01P01"),
    ("no_data", "02000"),
    ("sql_statement_not_yet_complete", "03000"),
    ("connection_exception", "08000"),
    ("connection_does_not_exist", "08003"),
    ("connection_failure", "08006"),
    ("sqlclient_unable_to_establish_sqlconnection", "08001"),
    ("sqlserver_rejected_establishment_of_sqlconnection", "08004"),
    ("transaction_resolution_unknown", "08007"),
    ("protocol_violation", "08P01"),
    ("triggered_action_exception", "09000"),
    ("feature_not_supported", "0A000"),
    ("invalid_transaction_initiation", "0B000"),
    ("locator_exception", "0F000"),
    ("invalid_grantor", "0L000"),
    ("invalid_role_specification", "0P000"),
    ("diagnostics_exception", "0Z000"),
    (
        "stacked_diagnostics_accessed_without_active_handler",
        "0Z002",
    ),
    ("case_not_found", "20000"),
    ("cardinality_violation", "21000"),
    ("data_exception", "22000"),
    ("array_subscript_error", "2202E"),
    ("character_not_in_repertoire", "22021"),
    ("datetime_field_overflow", "22008"),
    ("floating_point_exception", "22P01"),
    ("interval_field_overflow", "22015"),
    ("invalid_character_value_for_cast", "22018"),
    ("invalid_time_zone_displacement_value", "22009"),
    ("invalid_row_count_in_result_offset_clause", "2201X"),
    ("invalid_argument_for_ntile_function", "22014"),
    ("invalid_argument_for_nth_value_function", "22016"),
    ("nonstandard_use_of_escape_character", "22P06"),
    ("substring_error", "22011"),
    ("most_specific_type_mismatch", "2200G"),
    ("invalid_xml_document", "2200M"),
    ("sql_json_data_not_found", "22035"),
    ("invalid_json_subscript", "22033"),
    ("more_than_one_sql_json_item", "22034"),
    ("sql_json_member_not_found", "2203A"),
    ("sql_json_number_not_found", "2203B"),
    ("sql_json_object_not_found", "2203C"),
    ("too_many_json_array_elements", "2203D"),
    ("too_many_json_object_members", "2203E"),
    ("sql_json_scalar_required", "2203F"),
    ("division_by_zero", "22012"),
    ("invalid_argument_for_logarithm", "2201E"),
    ("invalid_argument_for_power_function", "2201F"),
    ("invalid_argument_for_width_bucket_function", "2201G"),
    ("invalid_datetime_format", "22007"),
    ("invalid_escape_sequence", "22025"),
    ("invalid_parameter_value", "22023"),
    ("invalid_regular_expression", "2201B"),
    ("invalid_row_count_in_limit_clause", "2201W"),
    ("invalid_text_representation", "22P02"),
    ("invalid_binary_representation", "22P03"),
    ("bad_copy_file_format", "22P04"),
    ("untranslatable_character", "22P05"),
    ("invalid_json_text", "22032"),
    ("null_value_not_allowed", "22004"),
    ("numeric_value_out_of_range", "22003"),
    ("sequence_generator_limit_exceeded", "2200H"),
    ("string_data_right_truncation", "22001"),
    ("integrity_constraint_violation", "23000"),
    ("restrict_violation", "23001"),
    ("not_null_violation", "23502"),
    ("foreign_key_violation", "23503"),
    ("unique_violation", "23505"),
    ("check_violation", "23514"),
    ("exclusion_violation", "23P01"),
    ("invalid_cursor_state", "24000"),
    ("invalid_transaction_state", "25000"),
    ("active_sql_transaction", "25001"),
    ("read_only_sql_transaction", "25006"),
    ("no_active_sql_transaction", "25P01"),
    ("in_failed_sql_transaction", "25P02"),
    ("idle_in_transaction_session_timeout", "25P03"),
    ("branch_transaction_already_active", "25002"),
    ("inappropriate_access_mode_for_branch_transaction", "25003"),
    (
        "inappropriate_isolation_level_for_branch_transaction",
        "25004",
    ),
    ("no_active_sql_transaction_for_branch_transaction", "25005"),
    ("schema_and_data_statement_mixing_not_supported", "25007"),
    ("held_cursor_requires_same_isolation_level", "25008"),
    ("invalid_sql_statement_name", "26000"),
    ("triggered_data_change_violation", "27000"),
    ("invalid_authorization_specification", "28000"),
    ("invalid_password", "28P01"),
    ("dependent_privilege_descriptors_still_exist", "2B000"),
    ("dependent_objects_still_exist", "2BP01"),
    ("invalid_transaction_termination", "2D000"),
    ("sql_routine_exception", "2F000"),
    ("invalid_cursor_name", "34000"),
    ("external_routine_exception", "38000"),
    ("external_routine_invocation_exception", "39000"),
    ("savepoint_exception", "3B000"),
    ("invalid_savepoint_specification", "3B001"),
    ("invalid_catalog_name", "3D000"),
    ("invalid_schema_name", "3F000"),
    ("transaction_rollback", "40000"),
    ("serialization_failure", "40001"),
    ("transaction_integrity_constraint_violation", "40002"),
    ("statement_completion_unknown", "40003"),
    ("deadlock_detected", "40P01"),
    ("syntax_error_or_access_rule_violation", "42000"),
    ("syntax_error", "42601"),
    ("insufficient_privilege", "42501"),
    ("cannot_coerce", "42846"),
    ("grouping_error", "42803"),
    ("windowing_error", "42P20"),
    ("invalid_foreign_key", "42830"),
    ("invalid_name", "42602"),
    ("name_too_long", "42622"),
    ("reserved_name", "42939"),
    ("datatype_mismatch", "42804"),
    ("indeterminate_datatype", "42P18"),
    ("wrong_object_type", "42809"),
    ("generated_always", "428C9"),
    ("undefined_column", "42703"),
    ("undefined_function", "42883"),
    ("undefined_table", "42P01"),
    ("undefined_parameter", "42P02"),
    ("undefined_object", "42704"),
    ("duplicate_column", "42701"),
    ("duplicate_cursor", "42P03"),
    ("duplicate_database", "42P04"),
    ("duplicate_function", "42723"),
    ("duplicate_prepared_statement", "42P05"),
    ("duplicate_schema", "42P06"),
    ("duplicate_table", "42P07"),
    ("duplicate_alias", "42712"),
    ("duplicate_object", "42710"),
    ("ambiguous_column", "42702"),
    ("ambiguous_function", "42725"),
    ("ambiguous_parameter", "42P08"),
    ("ambiguous_alias", "42P09"),
    ("invalid_column_reference", "42P10"),
    ("invalid_column_definition", "42611"),
    ("invalid_cursor_definition", "42P11"),
    ("invalid_database_definition", "42P12"),
    ("invalid_function_definition", "42P13"),
    ("invalid_prepared_statement_definition", "42P14"),
    ("invalid_schema_definition", "42P15"),
    ("invalid_table_definition", "42P16"),
    ("invalid_object_definition", "42P17"),
    ("invalid_recursion", "42P19"),
    ("invalid_grant_operation", "0LP01"),
    ("with_check_option_violation", "44000"),
    ("insufficient_resources", "53000"),
    ("disk_full", "53100"),
    ("out_of_memory", "53200"),
    ("too_many_connections", "53300"),
    ("program_limit_exceeded", "54000"),
    ("statement_too_complex", "54001"),
    ("too_many_columns", "54011"),
    ("too_many_arguments", "54023"),
    ("object_not_in_prerequisite_state", "55000"),
    ("object_in_use", "55006"),
    ("cant_change_runtime_param", "55P02"),
    ("lock_not_available", "55P03"),
    ("unsafe_new_enum_value_usage", "55P04"),
    ("operator_intervention", "57000"),
    ("query_canceled", "57014"),
    ("admin_shutdown", "57P01"),
    ("crash_shutdown", "57P02"),
    ("cannot_connect_now", "57P03"),
    ("database_dropped", "57P04"),
    ("idle_session_timeout", "57P05"),
    ("system_error", "58000"),
    ("io_error", "58030"),
    ("undefined_file", "58P01"),
    ("duplicate_file", "58P02"),
    ("config_file_error", "F0000"),
    ("fdw_error", "HV000"),
    ("plpgsql_error", "P0000"),
    ("raise_exception", "P0001"),
    ("no_data_found", "P0002"),
    ("too_many_rows", "P0003"),
    ("assert_failure", "P0004"),
    ("internal_error", "XX000"),
    ("data_corrupted", "XX001"),
    ("index_corrupted", "XX002"),
];

/// The SQLSTATE of a PostgreSQL condition name (`unique_violation`), case-insensitively.
pub fn condition_code(name: &str) -> Option<&'static str> {
    CONDITIONS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, code)| *code)
}

/// The condition name of a SQLSTATE, if PostgreSQL names it.
pub fn condition_name(code: &str) -> Option<&'static str> {
    CONDITIONS.iter().find(|(_, c)| *c == code).map(|(n, _)| *n)
}

/// Whether an error of SQLSTATE `code` is caught by a handler of `condition`: the same
/// code, or a class's code (`23000`) for any code of the class.
pub fn condition_matches(condition: &str, code: &str) -> bool {
    condition == code
        || (condition.len() == 5
            && condition.ends_with("000")
            && code.get(..2) == condition.get(..2))
}

/// The fields of an error response besides its code and message, which drivers read
/// (psycopg's `diag`, pgjdbc's `ServerErrorMessage`) and GET STACKED DIAGNOSTICS gives.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Fields {
    pub detail: Option<String>,
    pub hint: Option<String>,
    pub schema: Option<String>,
    pub table: Option<String>,
    pub column: Option<String>,
    pub constraint: Option<String>,
    pub routine: Option<String>,
}

/// The fields PostgreSQL would send with error `e`.
pub fn fields(e: &Error) -> Fields {
    let mut fields = Fields::default();
    match innermost(e) {
        // An unconstrained numeric's Arrow precision and scale are not the user's to see.
        Error::FieldOverflow { precision, scale }
            if *precision < sql::types::MAX_NUMERIC_PRECISION =>
        {
            fields.detail = Some(crate::convert::field_overflow_detail(*precision, *scale))
        }
        Error::DataFusion(inner) => {
            if let Some((precision, scale)) = decimal_overflow(&inner.to_string()) {
                fields.detail = Some(crate::convert::field_overflow_detail(precision, scale))
            }
        }
        // asyncpg and pgjdbc recognize this error by PostgreSQL's routine name, and prepare
        // the statement again.
        Error::CachedPlanChanged => fields.routine = Some("RevalidateCachedQuery".into()),
        Error::ScanClassNotAllowed { .. } => {
            fields.hint = Some(
                "Bind the partition key with = in the WHERE clause (and a row key prefix for a \
                 point or row range), or raise partita.max_scan_class."
                    .into(),
            )
        }
        // Drivers read the failing constraint, table and column from their own fields
        // (psycopg's `diag`, pgjdbc's `ServerErrorMessage`, Prisma's unique-field errors).
        Error::UniqueViolation {
            table,
            constraint,
            detail,
        }
        | Error::DuplicateInNewIndex {
            table,
            index: constraint,
            detail,
        }
        | Error::CheckViolation {
            table,
            constraint,
            detail,
        }
        | Error::ForeignKeyViolation {
            table,
            constraint,
            detail,
            ..
        } => {
            fields.detail = Some(detail.clone());
            fields.schema = Some("public".into());
            fields.table = Some(table.clone());
            fields.constraint = Some(constraint.clone());
        }
        Error::NotNull { table, column, row } => {
            fields.detail = Some(row.clone());
            fields.schema = Some("public".into());
            fields.table = Some(table.clone());
            fields.column = Some(column.clone());
        }
        Error::NullsInColumn { table, column } => {
            fields.schema = Some("public".into());
            fields.table = Some(table.clone());
            fields.column = Some(column.clone());
        }
        Error::ForeignKeyTypes { detail, .. } => fields.detail = Some(detail.clone()),
        Error::InvalidEscape(message) if message == "invalid escape string" => {
            fields.hint = Some("Escape string must be empty or one character.".into())
        }
        Error::TruncateReferenced { table, child } => {
            fields.detail = Some(format!("Table \"{child}\" references \"{table}\"."));
            fields.hint = Some(format!(
                "Truncate table \"{child}\" at the same time, or use TRUNCATE ... CASCADE."
            ));
        }
        Error::NotSupported {
            detail: Some(detail),
            ..
        } => fields.detail = Some(detail.clone()),
        Error::RequiredObject { hint, .. }
        | Error::WrongObjectKind { hint, .. }
        | Error::CannotCoerce { hint, .. } => fields.hint = Some(hint.clone()),
        Error::DependentObjects { detail, .. } => {
            fields.detail = Some(detail.clone());
            fields.hint = Some("Use DROP ... CASCADE to drop the dependent objects too.".into());
        }
        Error::GeneratedAlways {
            column,
            expression: true,
            ..
        } => fields.detail = Some(format!("Column \"{column}\" is a generated column.")),
        Error::GeneratedAlways { column, insert, .. } => {
            fields.detail = Some(format!(
                "Column \"{column}\" is an identity column defined as GENERATED ALWAYS."
            ));
            if *insert {
                fields.hint = Some("Use OVERRIDING SYSTEM VALUE to override.".into());
            }
        }
        Error::UpsertRowTwice => {
            fields.hint = Some(
                "Ensure that no rows proposed for insertion within the same command have \
                 duplicate constrained values."
                    .into(),
            )
        }
        Error::UndefinedFunction(_) => {
            fields.hint = Some(
                "No function matches the given name and argument types. You might need to \
                 add explicit type casts."
                    .into(),
            )
        }
        Error::UndefinedOperator(_) => {
            fields.hint = Some(
                "No operator matches the given name and argument types. You might need to \
                 add explicit type casts."
                    .into(),
            )
        }
        Error::Raised { detail, hint, .. } => {
            fields.detail = detail.clone();
            fields.hint = hint.clone();
        }
        Error::SerializationFailure => {
            fields.hint = Some(
                "The transaction might succeed if retried; retry it with exponential backoff."
                    .into(),
            )
        }
        Error::Storage(storage::Error::Conflict) => {
            fields.hint = Some(
                "The transaction might succeed if retried; retry it with exponential backoff."
                    .into(),
            )
        }
        _ => {}
    }
    fields
}

/// The planner error a DataFusion error carries, if any (errors raised inside a plan).
pub fn innermost(e: &Error) -> &Error {
    if let Error::DataFusion(df) = e {
        let mut inner = df;
        loop {
            match inner {
                DataFusionError::External(boxed) => {
                    return boxed.downcast_ref::<Error>().map_or(e, innermost);
                }
                DataFusionError::Context(_, next) => inner = next,
                DataFusionError::Shared(next) => inner = next,
                _ => return e,
            }
        }
    }
    e
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_messages_get_postgres_wording() {
        let w = |m: &str| postgres_wording(m).unwrap_or_default();
        assert_eq!(
            w("table 'partita.public.nope' not found"),
            "relation \"nope\" does not exist"
        );
        assert_eq!(
            w("No field named nope.\nValid fields are t.a."),
            "column \"nope\" does not exist"
        );
        assert_eq!(w("No field named t.nope."), "column t.nope does not exist");
        assert_eq!(
            w("No field named nope. Did you mean 'registrations.name'?."),
            "column \"nope\" does not exist"
        );
        assert_eq!(
            w("Ambiguous reference to unqualified field a"),
            "column reference \"a\" is ambiguous"
        );
        assert_eq!(
            w("Invalid function 'nofunc'.\nDid you mean 'trunc'?"),
            "function nofunc does not exist"
        );
        assert_eq!(
            w("Cannot cast string 'x' to value of Int32 type"),
            "invalid input syntax for type integer: \"x\""
        );
        assert_eq!(
            w("Cannot cast value 'maybe' to value of Boolean type"),
            "invalid input syntax for type boolean: \"maybe\""
        );
        assert_eq!(
            w("Cannot cast string '99999' to value of Int16 type"),
            "value \"99999\" is out of range for type smallint"
        );
        assert_eq!(
            w("Execution error: Placeholder '$1' was not provided a value for execution."),
            "there is no parameter $1"
        );
        assert_eq!(
            w("Cannot cast string '25:00' to value of Time64(ns) type"),
            "date/time field value out of range: \"25:00\""
        );
        assert_eq!(
            w("Cannot cast string 'noon' to value of Time64(ns) type"),
            "invalid input syntax for type time: \"noon\""
        );
        assert_eq!(
            w("syntax error: sql parser error: Expected: an expression, found: EOF"),
            "syntax error at end of input"
        );
        assert_eq!(
            w(
                "syntax error: sql parser error: Expected: end of statement, found: foo at Line: 1, Column: 10"
            ),
            "syntax error at or near \"foo\""
        );
        assert_eq!(
            w("Cast error: Can't cast value 2147483648 to type Int32"),
            "integer out of range"
        );
        assert_eq!(
            w("value of 100000000000000000000 is out of range Int64"),
            "bigint out of range"
        );
        assert_eq!(
            w("Execution error: Unable to parse date from 2024, 2, 30"),
            "date field value out of range: 2024-02-30"
        );
        assert_eq!(
            w(
                "Invalid regex\ncaused by\nExternal error: regex parse error:\n    (\n    ^\nerror: unclosed group"
            ),
            "invalid regular expression: unclosed group"
        );
        assert_eq!(postgres_wording("something else"), None);
    }

    #[test]
    fn common_datafusion_messages_get_their_codes() {
        assert_eq!(message_state("Arrow error: Divide by zero error"), "22012");
        assert_eq!(message_state("Schema error: No field named nope."), "42703");
        assert_eq!(
            message_state("Cannot cast string 'abc' to value of Int32 type"),
            "22P02"
        );
        assert_eq!(
            message_state(
                "Arrow error: Cast error: Cannot cast string '99999' to value of Int16 type"
            ),
            "22003"
        );
        assert_eq!(
            message_state("Arrow error: Cast error: Can't cast value 40000 to type Int16"),
            "22003"
        );
        assert_eq!(
            message_state("table 'partita.public.nope' not found"),
            "42P01"
        );
    }
}
