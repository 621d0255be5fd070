//! Query classes: how much of a table's key a WHERE clause pins down, and the key ranges that
//! follow (seeds 000/004, "Determine queries").
//!
//! Each conjunct of the pushed-down filters that compares a key column with a constant (`=`,
//! `IN`, `<`, `<=`, `>`, `>=`, `BETWEEN`, `LIKE 'abc%'`, ORs of those on one column) becomes a
//! set of values for that column, kept as order-preserving key encodings so that sets
//! intersect by byte comparison. Walking the key columns in order, leading columns with point
//! sets multiply into key prefixes; the first column with a range ends the walk. The result is
//! conservative: the ranges cover every row the filters can accept, and every conjunct not
//! enforced exactly by them stays in the residual filter.

use crate::convert::value_from_array;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, utils::split_conjunction};
use sql::catalog::TableDef;
use sql::types::SqlType;
use std::fmt;
use std::ops::Bound;
use storage::KeyRange;
use storage::keycodec::{self, KeyColumn, SortOrder, prefix_successor};

/// More keys than this from IN lists stop being enumerated; the column then ends the walk.
const MAX_POINTS: usize = 1024;

/// How a table access uses the key, from cheapest to dearest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScanClass {
    Point,
    MultiPoint,
    RowRange,
    PartitionRange,
    Full,
}

impl ScanClass {
    /// The name `partita.max_scan_class` uses.
    pub fn setting_name(self) -> &'static str {
        match self {
            ScanClass::Point | ScanClass::MultiPoint => "point",
            ScanClass::RowRange => "row_range",
            ScanClass::PartitionRange => "partition_range",
            ScanClass::Full => "full",
        }
    }

    /// The most a `partita.max_scan_class` value allows.
    pub fn from_setting(value: &str) -> Option<ScanClass> {
        Some(match value.trim().to_ascii_lowercase().as_str() {
            "point" => ScanClass::MultiPoint,
            "row_range" => ScanClass::RowRange,
            "partition_range" => ScanClass::PartitionRange,
            "full" => ScanClass::Full,
            _ => return None,
        })
    }
}

/// The classified access to one table.
#[derive(Debug, Clone)]
pub struct ScanSpec {
    pub class: ScanClass,
    /// Encoded key ranges to read, sorted and disjoint.
    pub ranges: Vec<KeyRange>,
    /// For Point / Multi-point: the keys themselves.
    pub keys: Option<Vec<Vec<u8>>>,
    /// Distinct partitions when the whole partition key is bound.
    pub partitions: Option<usize>,
    /// Hash buckets a partition-range or full scan fans out over.
    pub fan_out: Option<u16>,
    /// The key conditions used, in readable typed form (`tenant = 1 AND id >= 5`).
    pub key_text: String,
    /// For each input filter: true when the ranges enforce it exactly.
    pub consumed: Vec<bool>,
    /// Key columns bound to one value (`tenant = 1`): constant in the output.
    pub constant_columns: Vec<usize>,
    /// Whether reading the ranges in order yields rows in key order (not across the buckets
    /// of a hash-spread table).
    pub ordered: bool,
}

impl ScanSpec {
    /// The class in words, as EXPLAIN shows it.
    pub fn class_text(&self) -> String {
        match self.class {
            ScanClass::Point => "Point".into(),
            ScanClass::MultiPoint => {
                let n = self.keys.as_ref().map_or(0, Vec::len);
                format!("Multi-point ({n} {})", if n == 1 { "key" } else { "keys" })
            }
            ScanClass::RowRange => match self.partitions {
                Some(n) if n != 1 => format!("Row range scan ({n} partitions)"),
                _ => "Row range scan".into(),
            },
            ScanClass::PartitionRange => match self.fan_out {
                Some(b) => format!("Partition range scan (fan-out over {b} hash buckets)"),
                None => "Partition range scan".into(),
            },
            ScanClass::Full => "Full table scan".into(),
        }
    }
}

impl fmt::Display for ScanSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.class_text())?;
        if !self.key_text.is_empty() {
            write!(f, ": {}", self.key_text)?;
        }
        Ok(())
    }
}

/// One value of a key column: its ascending key encoding and how to show it.
#[derive(Debug, Clone)]
struct Point {
    enc: Vec<u8>,
    shown: String,
}

/// The values a column may take under the conjuncts seen so far.
#[derive(Debug, Clone)]
enum Set {
    /// Exactly these values, sorted by encoding, distinct.
    Points(Vec<Point>),
    /// Values between two bounds (bounds may be prefixes of encodings, for LIKE).
    Range {
        lower: Bound<Point>,
        upper: Bound<Point>,
        /// `LIKE 'abc%'` that produced this range unchanged.
        like: Option<String>,
    },
}

/// What one conjunct says about one column.
struct Constraint {
    column: usize,
    set: Set,
    /// The conjunct is exactly this set (no wildcard after the LIKE prefix, …).
    exact: bool,
}

/// Classifies the access to `def` under `filters` (each a conjunction).
pub fn classify(def: &TableDef, filters: &[Expr]) -> ScanSpec {
    let layout = match def.layout() {
        Ok(l) => l,
        Err(_) => return full_scan(def, filters.len()),
    };
    let key_cols: Vec<(usize, KeyColumn)> = def
        .partition_key
        .iter()
        .copied()
        .zip(layout.partition.iter().copied())
        .chain(
            def.row_key
                .iter()
                .map(|p| p.column)
                .zip(layout.row.iter().copied()),
        )
        .collect();

    // Per key column: its set and the filters that made it.
    let mut sets: Vec<Option<Set>> = vec![None; key_cols.len()];
    let mut sources: Vec<Vec<(usize, bool)>> = vec![Vec::new(); key_cols.len()];
    let mut empty = false;
    let mut tuples: Vec<(usize, Tuple)> = Vec::new();
    for (f, filter) in filters.iter().enumerate() {
        for conjunct in split_conjunction(filter) {
            if let Expr::Literal(ScalarValue::Boolean(Some(false) | None) | ScalarValue::Null, _) =
                conjunct
            {
                // DataFusion folds contradictions (`id = 1 AND id = 2`) to false.
                return nothing(filters.len());
            }
            if let Some(t) = tuple_constraint(def, &key_cols, conjunct) {
                tuples.push((f, t));
                continue;
            }
            let Some(c) = constraint(def, conjunct) else {
                continue;
            };
            let Some(k) = key_cols.iter().position(|(col, _)| *col == c.column) else {
                continue;
            };
            sources[k].push((f, c.exact));
            sets[k] = Some(match sets[k].take() {
                None => c.set,
                Some(old) => match intersect(old, c.set) {
                    Some(s) => s,
                    None => {
                        empty = true;
                        Set::Points(vec![])
                    }
                },
            });
        }
    }

    if empty {
        return nothing(filters.len());
    }

    // Walk the key columns.
    let partition_len = def.partition_key.len();
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    let mut eq_cols = 0;
    let mut range_col: Option<(usize, Bound<Point>, Bound<Point>)> = None;
    let mut texts = Vec::new();
    let mut constant_columns = Vec::new();
    for (k, (col, key_col)) in key_cols.iter().enumerate() {
        let name = &def.columns[*col].name;
        match &sets[k] {
            Some(Set::Points(points)) if prefixes.len() * points.len().max(1) <= MAX_POINTS => {
                let mut next = Vec::with_capacity(prefixes.len() * points.len());
                for prefix in &prefixes {
                    for p in points {
                        let mut key = prefix.clone();
                        key.extend(ordered(&p.enc, key_col.order));
                        next.push(key);
                    }
                }
                prefixes = next;
                if points.len() == 1 {
                    constant_columns.push(*col);
                }
                texts.push(match points.as_slice() {
                    [one] => format!("{name} = {}", one.shown),
                    many => format!(
                        "{name} IN ({})",
                        many.iter()
                            .map(|p| p.shown.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
                eq_cols += 1;
            }
            Some(Set::Range { lower, upper, like }) => {
                texts.push(match like {
                    Some(pattern) => format!("{name} LIKE {pattern}"),
                    None => range_text(name, lower, upper),
                });
                range_col = Some((k, lower.clone(), upper.clone()));
                break;
            }
            None => {
                // A row-value comparison starting at this column: `(a, b) > (1, 2)`.
                if let Some((f, t)) = tuples.iter().find(|(_, t)| t.first_key == k) {
                    texts.push(range_text(&t.names, &t.lower, &t.upper));
                    range_col = Some((k, t.lower.clone(), t.upper.clone()));
                    sources[k].push((*f, true));
                }
                break;
            }
            _ => break,
        }
    }

    let mut consumed = vec![false; filters.len()];
    let used_cols = eq_cols + usize::from(range_col.is_some());
    // A filter is consumed when every conjunct of it is enforced exactly by the ranges.
    let mut enforced = vec![0usize; filters.len()];
    for (k, list) in sources.iter().enumerate() {
        for &(f, exact) in list {
            if k < used_cols && exact {
                enforced[f] += 1;
            }
        }
    }
    for (f, filter) in filters.iter().enumerate() {
        consumed[f] = enforced[f] > 0 && enforced[f] == split_conjunction(filter).len();
    }

    let key_text = texts.join(" AND ");
    let all_keys = eq_cols == key_cols.len();
    let partition_bound = eq_cols >= partition_len;
    let class = if all_keys && range_col.is_none() {
        if prefixes.len() == 1 {
            ScanClass::Point
        } else {
            ScanClass::MultiPoint
        }
    } else if partition_bound {
        ScanClass::RowRange
    } else if eq_cols > 0 || range_col.is_some() {
        ScanClass::PartitionRange
    } else {
        return full_scan(def, filters.len());
    };
    // Hash-spread tables: the bucket goes in front.
    let mut fan_out = None;
    // Length of the partition part of each prefix, when the whole partition key is bound.
    let partition_part = |p: &[u8]| -> usize {
        let mut rest = p;
        for col in &layout.partition {
            if keycodec::skip_value(&mut rest, *col).is_err() {
                break;
            }
        }
        p.len() - rest.len()
    };
    let prefixes: Vec<Vec<u8>> = if layout.is_hash_spread() {
        match partition_bound {
            true => prefixes
                .iter()
                .map(|p| with_bucket(layout.bucket_of(&p[..partition_part(p)]), p))
                .collect(),
            false => {
                fan_out = Some(layout.hash_buckets);
                (0..layout.hash_buckets)
                    .flat_map(|b| prefixes.iter().map(move |p| with_bucket(b, p)))
                    .collect()
            }
        }
    } else {
        prefixes
    };

    let mut ranges: Vec<KeyRange> = match &range_col {
        None if all_keys => prefixes
            .iter()
            .map(|k| KeyRange {
                lower: Bound::Included(k.clone().into()),
                upper: Bound::Included(k.clone().into()),
            })
            .collect(),
        None => prefixes.iter().map(|p| prefix_range(p)).collect(),
        Some((k, lower, upper)) => {
            let order = key_cols[*k].1.order;
            prefixes
                .iter()
                .filter_map(|p| bounded_range(p, lower, upper, order))
                .filter(|r| !r.is_empty())
                .collect()
        }
    };
    ranges.sort_by(|a, b| lower_cmp(&a.lower, &b.lower));
    let keys = (class <= ScanClass::MultiPoint).then(|| prefixes.clone());
    let bucket = if layout.is_hash_spread() { 2 } else { 0 };
    let partitions = partition_bound.then(|| {
        let mut parts: Vec<&[u8]> = prefixes
            .iter()
            .map(|p| &p[..bucket + partition_part(&p[bucket..])])
            .collect();
        parts.sort();
        parts.dedup();
        parts.len()
    });
    let ordered = !layout.is_hash_spread() || partitions == Some(1);
    ScanSpec {
        class,
        ranges,
        keys,
        partitions,
        fan_out,
        key_text,
        consumed,
        constant_columns,
        ordered,
    }
}

/// No key can match: nothing is read.
fn nothing(filters: usize) -> ScanSpec {
    ScanSpec {
        class: ScanClass::MultiPoint,
        ranges: vec![],
        keys: Some(vec![]),
        partitions: None,
        fan_out: None,
        key_text: "no key matches (the conditions contradict)".into(),
        consumed: vec![true; filters],
        constant_columns: vec![],
        ordered: true,
    }
}

fn full_scan(def: &TableDef, filters: usize) -> ScanSpec {
    ScanSpec {
        class: ScanClass::Full,
        ranges: vec![KeyRange::all()],
        keys: None,
        partitions: None,
        fan_out: (def.hash_buckets > 0).then_some(def.hash_buckets),
        key_text: String::new(),
        consumed: vec![false; filters],
        constant_columns: vec![],
        ordered: def.hash_buckets == 0,
    }
}

fn with_bucket(bucket: u16, prefix: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + 2);
    out.extend_from_slice(&bucket.to_be_bytes());
    out.extend_from_slice(prefix);
    out
}

/// A column's ascending encoding in the column's own order.
fn ordered(enc: &[u8], order: SortOrder) -> Vec<u8> {
    match order {
        SortOrder::Asc => enc.to_vec(),
        SortOrder::Desc => enc.iter().map(|b| !b).collect(),
    }
}

/// Every key that starts with `prefix`.
fn prefix_range(prefix: &[u8]) -> KeyRange {
    if prefix.is_empty() {
        return KeyRange::all();
    }
    KeyRange {
        lower: Bound::Included(prefix.to_vec().into()),
        upper: match prefix_successor(prefix) {
            Some(s) => Bound::Excluded(s.into()),
            None => Bound::Unbounded,
        },
    }
}

/// Keys starting with `prefix` whose next column lies between `lower` and `upper` (value
/// bounds, in ascending encoding).
fn bounded_range(
    prefix: &[u8],
    lower: &Bound<Point>,
    upper: &Bound<Point>,
    order: SortOrder,
) -> Option<KeyRange> {
    let joined = |p: &Point| {
        let mut k = prefix.to_vec();
        k.extend(ordered(&p.enc, order));
        k
    };
    // "At or after every key whose column is ≥ v" and "before every key whose column is > v".
    let start_at = |p: &Point| Bound::Included(joined(p).into());
    // No successor (all 0xFF): nothing comes after, the range is empty.
    let start_after = |p: &Point| prefix_successor(&joined(p)).map(|s| Bound::Included(s.into()));
    let end_before = |p: &Point| Bound::Excluded(joined(p).into());
    let end_after = |p: &Point| match prefix_successor(&joined(p)) {
        Some(s) => Bound::Excluded(s.into()),
        None => Bound::Unbounded,
    };
    let whole = prefix_range(prefix);
    let (lo, hi) = match order {
        SortOrder::Asc => (
            match lower {
                Bound::Included(p) => start_at(p),
                Bound::Excluded(p) => start_after(p)?,
                Bound::Unbounded => whole.lower.clone(),
            },
            match upper {
                Bound::Included(p) => end_after(p),
                Bound::Excluded(p) => end_before(p),
                Bound::Unbounded => whole.upper.clone(),
            },
        ),
        // Descending: larger values come first.
        SortOrder::Desc => (
            match upper {
                Bound::Included(p) => start_at(p),
                Bound::Excluded(p) => start_after(p)?,
                Bound::Unbounded => whole.lower.clone(),
            },
            match lower {
                Bound::Included(p) => end_after(p),
                Bound::Excluded(p) => end_before(p),
                Bound::Unbounded => whole.upper.clone(),
            },
        ),
    };
    Some(KeyRange {
        lower: lo,
        upper: hi,
    })
}

fn lower_cmp(a: &Bound<bytes::Bytes>, b: &Bound<bytes::Bytes>) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Bound::Unbounded, Bound::Unbounded) => Ordering::Equal,
        (Bound::Unbounded, _) => Ordering::Less,
        (_, Bound::Unbounded) => Ordering::Greater,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            x.cmp(y)
        }
    }
}

fn range_text(name: &str, lower: &Bound<Point>, upper: &Bound<Point>) -> String {
    let mut parts = Vec::new();
    match lower {
        Bound::Included(p) => parts.push(format!("{name} >= {}", p.shown)),
        Bound::Excluded(p) => parts.push(format!("{name} > {}", p.shown)),
        Bound::Unbounded => {}
    }
    match upper {
        Bound::Included(p) => parts.push(format!("{name} <= {}", p.shown)),
        Bound::Excluded(p) => parts.push(format!("{name} < {}", p.shown)),
        Bound::Unbounded => {}
    }
    parts.join(" AND ")
}

/// Lower bounds: the larger is tighter; at equal encodings, Excluded is.
fn tighter_lower(a: Bound<Point>, b: Bound<Point>) -> Bound<Point> {
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x,
        (a, b) => {
            let (ea, eb) = (bound_enc(&a), bound_enc(&b));
            match ea.cmp(eb) {
                std::cmp::Ordering::Greater => a,
                std::cmp::Ordering::Less => b,
                std::cmp::Ordering::Equal => {
                    if matches!(a, Bound::Excluded(_)) {
                        a
                    } else {
                        b
                    }
                }
            }
        }
    }
}

fn tighter_upper(a: Bound<Point>, b: Bound<Point>) -> Bound<Point> {
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x,
        (a, b) => {
            let (ea, eb) = (bound_enc(&a), bound_enc(&b));
            match ea.cmp(eb) {
                std::cmp::Ordering::Less => a,
                std::cmp::Ordering::Greater => b,
                std::cmp::Ordering::Equal => {
                    if matches!(a, Bound::Excluded(_)) {
                        a
                    } else {
                        b
                    }
                }
            }
        }
    }
}

fn bound_enc(b: &Bound<Point>) -> &[u8] {
    match b {
        Bound::Included(p) | Bound::Excluded(p) => &p.enc,
        Bound::Unbounded => &[],
    }
}

fn within(p: &Point, lower: &Bound<Point>, upper: &Bound<Point>) -> bool {
    let lower_ok = match lower {
        Bound::Included(l) => p.enc >= l.enc,
        Bound::Excluded(l) => p.enc > l.enc,
        Bound::Unbounded => true,
    };
    let upper_ok = match upper {
        Bound::Included(u) => p.enc <= u.enc,
        Bound::Excluded(u) => p.enc < u.enc,
        Bound::Unbounded => true,
    };
    lower_ok && upper_ok
}

/// The values both sets allow; `None` when there are none.
fn intersect(a: Set, b: Set) -> Option<Set> {
    let set = match (a, b) {
        (Set::Points(x), Set::Points(y)) => Set::Points(
            x.into_iter()
                .filter(|p| y.iter().any(|q| q.enc == p.enc))
                .collect(),
        ),
        (Set::Points(x), Set::Range { lower, upper, .. })
        | (Set::Range { lower, upper, .. }, Set::Points(x)) => Set::Points(
            x.into_iter()
                .filter(|p| within(p, &lower, &upper))
                .collect(),
        ),
        (
            Set::Range {
                lower: l1,
                upper: u1,
                ..
            },
            Set::Range {
                lower: l2,
                upper: u2,
                ..
            },
        ) => {
            let lower = tighter_lower(l1, l2);
            let upper = tighter_upper(u1, u2);
            let empty = match (&lower, &upper) {
                (Bound::Included(l), Bound::Included(u)) => l.enc > u.enc,
                (
                    Bound::Included(l) | Bound::Excluded(l),
                    Bound::Included(u) | Bound::Excluded(u),
                ) => l.enc >= u.enc,
                _ => false,
            };
            if empty {
                return None;
            }
            Set::Range {
                lower,
                upper,
                like: None,
            }
        }
    };
    match &set {
        Set::Points(p) if p.is_empty() => None,
        _ => Some(set),
    }
}

/// The hull of two sets (for OR).
fn union(a: Set, b: Set) -> Set {
    match (a, b) {
        (Set::Points(mut x), Set::Points(y)) => {
            x.extend(y);
            x.sort_by(|p, q| p.enc.cmp(&q.enc));
            x.dedup_by(|p, q| p.enc == q.enc);
            Set::Points(x)
        }
        (a, b) => {
            let (l1, u1) = bounds(a);
            let (l2, u2) = bounds(b);
            Set::Range {
                lower: looser_lower(l1, l2),
                upper: looser_upper(u1, u2),
                like: None,
            }
        }
    }
}

fn bounds(s: Set) -> (Bound<Point>, Bound<Point>) {
    match s {
        Set::Range { lower, upper, .. } => (lower, upper),
        Set::Points(p) => match (p.first(), p.last()) {
            (Some(first), Some(last)) => (
                Bound::Included(first.clone()),
                Bound::Included(last.clone()),
            ),
            _ => (Bound::Unbounded, Bound::Unbounded),
        },
    }
}

fn looser_lower(a: Bound<Point>, b: Bound<Point>) -> Bound<Point> {
    match (a, b) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => Bound::Unbounded,
        (a, b) => {
            if tighter_lower(a.clone(), b.clone()).eq_bound(&a) {
                b
            } else {
                a
            }
        }
    }
}

fn looser_upper(a: Bound<Point>, b: Bound<Point>) -> Bound<Point> {
    match (a, b) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => Bound::Unbounded,
        (a, b) => {
            if tighter_upper(a.clone(), b.clone()).eq_bound(&a) {
                b
            } else {
                a
            }
        }
    }
}

trait EqBound {
    fn eq_bound(&self, other: &Self) -> bool;
}

impl EqBound for Bound<Point> {
    fn eq_bound(&self, other: &Self) -> bool {
        match (self, other) {
            (Bound::Included(a), Bound::Included(b)) | (Bound::Excluded(a), Bound::Excluded(b)) => {
                a.enc == b.enc
            }
            (Bound::Unbounded, Bound::Unbounded) => true,
            _ => false,
        }
    }
}

/// A row-value comparison over consecutive key columns of one direction, as a range over
/// their concatenated encodings (which order like the tuples, the encodings being
/// prefix-free).
struct Tuple {
    first_key: usize,
    names: String,
    lower: Bound<Point>,
    upper: Bound<Point>,
}

fn tuple_constraint(def: &TableDef, key_cols: &[(usize, KeyColumn)], expr: &Expr) -> Option<Tuple> {
    let (columns, values, op) = match struct_comparison(def, expr) {
        Some(found) => found,
        None => {
            let (fields, op) = lexicographic(def, expr)?;
            let (columns, values) = fields.into_iter().unzip();
            (columns, values, op)
        }
    };
    if columns.len() < 2 || values.len() != columns.len() {
        return None;
    }
    let first_key = key_cols.iter().position(|(c, _)| *c == columns[0])?;
    let order = key_cols[first_key].1.order;
    let mut enc = Vec::new();
    let mut shown = Vec::new();
    for (i, &column) in columns.iter().enumerate() {
        let (key_column, key) = key_cols.get(first_key + i)?;
        if *key_column != column || key.order != order {
            return None;
        }
        let value = values[i].clone();
        if value.is_null() {
            return None;
        }
        let p = point(def, column, value)?;
        enc.extend(p.enc);
        shown.push(p.shown);
    }
    let p = Point {
        enc,
        shown: format!("({})", shown.join(", ")),
    };
    let (lower, upper) = match op {
        Operator::Lt => (Bound::Unbounded, Bound::Excluded(p)),
        Operator::LtEq => (Bound::Unbounded, Bound::Included(p)),
        Operator::Gt => (Bound::Excluded(p), Bound::Unbounded),
        Operator::GtEq => (Bound::Included(p), Bound::Unbounded),
        _ => return None,
    };
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| def.columns[c].name.as_str())
        .collect();
    Some(Tuple {
        first_key,
        names: format!("({})", names.join(", ")),
        lower,
        upper,
    })
}

/// `struct(a, b) < struct(1, 2)`: the key columns, the constant's fields and the operator.
fn struct_comparison(
    def: &TableDef,
    expr: &Expr,
) -> Option<(Vec<usize>, Vec<ScalarValue>, Operator)> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = expr else {
        return None;
    };
    let (columns, value, op) = match (tuple_columns(def, left), literal(right)) {
        (Some(c), Some(v)) => (c, v, *op),
        _ => (tuple_columns(def, right)?, literal(left)?, op.swap()?),
    };
    let ScalarValue::Struct(values) = value else {
        return None;
    };
    if datafusion::arrow::array::Array::len(values.as_ref()) != 1 {
        return None;
    }
    let values = values
        .columns()
        .iter()
        .map(|c| ScalarValue::try_from_array(c, 0).ok())
        .collect::<Option<Vec<_>>>()?;
    Some((columns, values, op))
}

/// A row comparison as the planner expands it (`functions::rewrite`), `(a, b) > (1, 5)`
/// being `a > 1 OR (a = 1 AND b > 5)`: each key column with its constant, and the operator
/// of the last field. The earlier fields' strict operator must agree with it.
fn lexicographic(def: &TableDef, expr: &Expr) -> Option<(Vec<(usize, ScalarValue)>, Operator)> {
    let field = |e: &Expr| -> Option<(usize, ScalarValue, Operator)> {
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = e else {
            return None;
        };
        match (key_column(def, left), literal(right)) {
            (Some(c), Some(v)) => Some((c, v, *op)),
            _ => Some((key_column(def, right)?, literal(left)?, op.swap()?)),
        }
    };
    let strict = |op: Operator| match op {
        Operator::Lt | Operator::LtEq => Some(Operator::Lt),
        Operator::Gt | Operator::GtEq => Some(Operator::Gt),
        _ => None,
    };
    if let Some((column, value, op)) = field(expr) {
        strict(op)?;
        return Some((vec![(column, value)], op));
    }
    let Expr::BinaryExpr(BinaryExpr {
        left,
        op: Operator::Or,
        right,
    }) = expr
    else {
        return None;
    };
    let (column, value, unequal) = field(left)?;
    let Expr::BinaryExpr(BinaryExpr {
        left: equal,
        op: Operator::And,
        right: rest,
    }) = right.as_ref()
    else {
        return None;
    };
    if field(equal)? != (column, value.clone(), Operator::Eq) {
        return None;
    }
    let (mut fields, op) = lexicographic(def, rest)?;
    if strict(op)? != unequal {
        return None;
    }
    fields.insert(0, (column, value));
    Some((fields, op))
}

/// The key columns of a row value `(a, b)` (DataFusion's `struct(a, b)`, maybe cast).
fn tuple_columns(def: &TableDef, expr: &Expr) -> Option<Vec<usize>> {
    match expr {
        Expr::Cast(cast) => {
            let columns = tuple_columns(def, &cast.expr)?;
            let datafusion::arrow::datatypes::DataType::Struct(fields) = cast.field.data_type()
            else {
                return None;
            };
            let lossless = fields.len() == columns.len()
                && columns.iter().zip(fields.iter()).all(|(&c, f)| {
                    f.data_type() == &def.columns[c].ty.arrow()
                        || lossless_widening(def.columns[c].ty, f.data_type())
                });
            lossless.then_some(columns)
        }
        Expr::ScalarFunction(f) if f.name() == "struct" => {
            f.args.iter().map(|a| key_column(def, a)).collect()
        }
        Expr::ScalarFunction(f) if f.name() == "named_struct" => f
            .args
            .iter()
            .skip(1)
            .step_by(2)
            .map(|a| key_column(def, a))
            .collect(),
        _ => None,
    }
}

/// What a conjunct says about one key column, if it is a form we use.
fn constraint(def: &TableDef, expr: &Expr) -> Option<Constraint> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if *op == Operator::Or => {
            let a = constraint(def, left)?;
            let b = constraint(def, right)?;
            if a.column != b.column {
                return None;
            }
            let exact = a.exact
                && b.exact
                && matches!(a.set, Set::Points(_))
                && matches!(b.set, Set::Points(_));
            Some(Constraint {
                column: a.column,
                set: union(a.set, b.set),
                exact,
            })
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (column, value, op) = match (key_column(def, left), literal(right)) {
                (Some(c), Some(v)) => (c, v, *op),
                _ => match (literal(left), key_column(def, right)) {
                    (Some(v), Some(c)) => (c, v, op.swap()?),
                    _ => return None,
                },
            };
            let point = point(def, column, value)?;
            let set = match op {
                Operator::Eq => Set::Points(vec![point]),
                Operator::Lt => range(Bound::Unbounded, Bound::Excluded(point)),
                Operator::LtEq => range(Bound::Unbounded, Bound::Included(point)),
                Operator::Gt => range(Bound::Excluded(point), Bound::Unbounded),
                Operator::GtEq => range(Bound::Included(point), Bound::Unbounded),
                _ => return None,
            };
            Some(Constraint {
                column,
                set,
                exact: true,
            })
        }
        Expr::InList(list) if !list.negated => {
            let column = key_column(def, &list.expr)?;
            let mut points = Vec::with_capacity(list.list.len());
            for item in &list.list {
                points.push(point(def, column, literal(item)?)?);
            }
            points.sort_by(|p, q| p.enc.cmp(&q.enc));
            points.dedup_by(|p, q| p.enc == q.enc);
            Some(Constraint {
                column,
                set: Set::Points(points),
                exact: true,
            })
        }
        Expr::Between(b) if !b.negated => {
            let column = key_column(def, &b.expr)?;
            let low = point(def, column, literal(&b.low)?)?;
            let high = point(def, column, literal(&b.high)?)?;
            Some(Constraint {
                column,
                set: range(Bound::Included(low), Bound::Included(high)),
                exact: true,
            })
        }
        Expr::Like(like) if !like.negated && !like.case_insensitive => {
            let column = key_column(def, &like.expr)?;
            if def.columns[column].ty.scalar() != storage::ScalarType::Text {
                return None;
            }
            let (ScalarValue::Utf8(Some(pattern)) | ScalarValue::Utf8View(Some(pattern))) =
                literal(&like.pattern)?
            else {
                return None;
            };
            let (prefix, rest) = like_prefix(&pattern, like.escape_char.unwrap_or('\\'));
            if prefix.is_empty() {
                return None;
            }
            let mut enc = Vec::new();
            let col = KeyColumn::asc(storage::ScalarType::Text);
            keycodec::encode_value(&mut enc, &storage::Value::Text(prefix.clone()), col).ok()?;
            enc.truncate(enc.len() - 2); // the terminator: every longer string shares the rest
            let upper = prefix_successor(&enc)?;
            let shown = quote(&prefix);
            Some(Constraint {
                column,
                set: Set::Range {
                    lower: Bound::Included(Point {
                        enc,
                        shown: shown.clone(),
                    }),
                    upper: Bound::Excluded(Point {
                        enc: upper,
                        shown: format!("{shown} + 1"),
                    }),
                    like: Some(quote(&pattern)),
                },
                exact: rest == "%",
            })
        }
        _ => None,
    }
}

fn range(lower: Bound<Point>, upper: Bound<Point>) -> Set {
    Set::Range {
        lower,
        upper,
        like: None,
    }
}

/// The literal prefix of a LIKE pattern and what follows it.
fn like_prefix(pattern: &str, escape: char) -> (String, String) {
    let mut prefix = String::new();
    let mut chars = pattern.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == escape {
            match chars.next() {
                Some((_, next)) => prefix.push(next),
                None => return (prefix, pattern[i..].to_string()),
            }
        } else if c == '%' || c == '_' {
            return (prefix, pattern[i..].to_string());
        } else {
            prefix.push(c);
        }
    }
    (prefix, String::new())
}

/// The key column an expression names, seeing through casts that keep order and equality.
fn key_column(def: &TableDef, expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Column(c) => {
            let i = def.column_index(&c.name)?;
            def.is_key_column(i).then_some(i)
        }
        Expr::Cast(cast) => {
            let i = key_column(def, &cast.expr)?;
            lossless_widening(def.columns[i].ty, cast.field.data_type()).then_some(i)
        }
        _ => None,
    }
}

/// Casts under which comparisons give the same answers as on the column itself.
fn lossless_widening(from: SqlType, to: &datafusion::arrow::datatypes::DataType) -> bool {
    use datafusion::arrow::datatypes::DataType as D;
    match (from.arrow(), to) {
        (D::Int16, D::Int32 | D::Int64) | (D::Int32, D::Int64) => true,
        (D::Utf8, D::Utf8 | D::Utf8View | D::LargeUtf8) => {
            matches!(from, SqlType::Text | SqlType::Varchar { .. })
        }
        _ => false,
    }
}

fn literal(expr: &Expr) -> Option<ScalarValue> {
    match expr {
        Expr::Literal(v, _) if !v.is_null() => Some(v.clone()),
        Expr::Cast(cast) => {
            let inner = literal(&cast.expr)?;
            let cast_value = inner.cast_to(cast.field.data_type()).ok()?;
            Some(cast_value)
        }
        _ => None,
    }
}

/// A constant as a value of key column `column`, when it converts exactly.
fn point(def: &TableDef, column: usize, value: ScalarValue) -> Option<Point> {
    let col = &def.columns[column];
    let ty = col.ty;
    let wanted = ty.arrow();
    let converted = if value.data_type() == wanted {
        value.clone()
    } else {
        let c = value.cast_to(&wanted).ok()?;
        // The conversion must not round or truncate.
        let back = c.cast_to(&value.data_type()).ok()?;
        if back != value {
            return None;
        }
        c
    };
    let array = converted.to_array().ok()?;
    let stored = value_from_array(&array, 0, ty, &col.name).ok()?;
    if let (storage::Value::Text(t), ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s))) =
        (&stored, &converted)
        && t != s
    {
        // varchar(n) storage trims trailing blanks past n; a comparison does not.
        return None;
    }
    if let SqlType::Char { length } = ty
        && !matches!(&converted, ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s))
            if s.chars().count() == length as usize)
    {
        // Stored values are padded to their length; only a literal padded the same way
        // (as `casts::char_semantics` pads a comparison's operand) finds one.
        return None;
    }
    let mut enc = Vec::new();
    keycodec::encode_value(&mut enc, &stored, KeyColumn::asc(ty.scalar())).ok()?;
    Some(Point {
        enc,
        shown: shown(&converted),
    })
}

fn shown(value: &ScalarValue) -> String {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => quote(s),
        ScalarValue::Date32(Some(_))
        | ScalarValue::TimestampMicrosecond(..)
        | ScalarValue::TimestampNanosecond(..) => quote(&value.to_string()),
        other => other.to_string(),
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::*;
    use sql::ddl::table_def_from_create;

    fn table(ddl: &str) -> TableDef {
        let stmt = crate::session::parse_sql(ddl).unwrap().remove(0);
        let datafusion::sql::sqlparser::ast::Statement::CreateTable(create) = stmt else {
            panic!("not a CREATE TABLE: {ddl}");
        };
        table_def_from_create(&create, &[]).unwrap()
    }

    /// Plans `SELECT * FROM t WHERE <where>` in DataFusion and classifies the filters it
    /// would push into the scan.
    fn spec(def: &TableDef, where_clause: &str) -> String {
        let schema = datafusion::common::DFSchema::try_from(def_schema(def)).unwrap();
        let ctx = SessionContext::new();
        let expr = ctx.parse_sql_expr(where_clause, &schema).unwrap();
        let simplified = simplify(expr, &schema);
        let s = classify(def, &[simplified]);
        let mut out = s.to_string();
        if !s.consumed.iter().all(|c| *c) {
            out.push_str(" + residual");
        }
        out
    }

    fn def_schema(def: &TableDef) -> datafusion::arrow::datatypes::Schema {
        datafusion::arrow::datatypes::Schema::new(
            def.columns
                .iter()
                .map(|c| c.ty.field(&c.name, c.nullable))
                .collect::<Vec<_>>(),
        )
    }

    fn simplify(expr: Expr, schema: &datafusion::common::DFSchema) -> Expr {
        use datafusion::logical_expr::simplify::SimplifyContext;
        use datafusion::optimizer::simplify_expressions::ExprSimplifier;
        let context = SimplifyContext::builder()
            .with_schema(std::sync::Arc::new(schema.clone()))
            .build();
        ExprSimplifier::new(context).simplify(expr).unwrap()
    }

    #[test]
    fn classes() {
        let reg = table(
            "CREATE TABLE reg (tenant int, id bigint, name text, age int, PRIMARY KEY ((tenant), id))",
        );
        let cases = [
            ("tenant = 1 AND id = 5", "Point: tenant = 1 AND id = 5"),
            (
                "tenant = 1 AND id IN (5, 3, 5)",
                "Multi-point (2 keys): tenant = 1 AND id IN (3, 5)",
            ),
            (
                "(tenant = 1 OR tenant = 2) AND id = 7",
                "Multi-point (2 keys): tenant IN (1, 2) AND id = 7",
            ),
            ("tenant = 1", "Row range scan: tenant = 1"),
            (
                "tenant = 1 AND id >= 5 AND id < 10",
                "Row range scan: tenant = 1 AND id >= 5 AND id < 10",
            ),
            (
                "tenant = 1 AND id BETWEEN 5 AND 10",
                "Row range scan: tenant = 1 AND id >= 5 AND id <= 10",
            ),
            (
                "tenant = 1 AND name = 'x'",
                "Row range scan: tenant = 1 + residual",
            ),
            (
                "tenant IN (1, 2) AND id > 3",
                "Row range scan (2 partitions): tenant IN (1, 2) AND id > 3",
            ),
            (
                "tenant >= 10 AND tenant < 20",
                "Partition range scan: tenant >= 10 AND tenant < 20",
            ),
            ("id = 5", "Full table scan + residual"),
            ("name = 'x' OR tenant = 1", "Full table scan + residual"),
            (
                "tenant = 1 AND id = 5 AND id = 6",
                "Multi-point (0 keys): no key matches (the conditions contradict)",
            ),
            (
                "tenant = CAST(1 AS bigint) AND id = 2 + 3",
                "Point: tenant = 1 AND id = 5",
            ),
            ("tenant = 1.5", "Full table scan + residual"),
        ];
        for (sql, want) in cases {
            assert_eq!(spec(&reg, sql), want, "WHERE {sql}");
        }
    }

    #[test]
    fn text_desc_and_hash_keys() {
        let t = table("CREATE TABLE ev (dev text, ts bigint, v int, PRIMARY KEY ((dev), ts DESC))");
        let cases = [
            ("dev LIKE 'ab%'", "Partition range scan: dev LIKE 'ab%'"),
            (
                "dev LIKE 'ab%c'",
                "Partition range scan: dev LIKE 'ab%c' + residual",
            ),
            (
                "dev = 'a' AND ts > 100",
                "Row range scan: dev = 'a' AND ts > 100",
            ),
            (
                "dev = 'a' AND ts <= 100 AND v = 1",
                "Row range scan: dev = 'a' AND ts <= 100 + residual",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(spec(&t, sql), want, "WHERE {sql}");
        }
        let kv = table("CREATE TABLE kv (p int, a int, b int, v int, PRIMARY KEY ((p), a, b))");
        for (sql, want) in [
            (
                "p = 1 AND (a, b) > (3, 100)",
                "Row range scan: p = 1 AND (a, b) > (3, 100)",
            ),
            (
                "p = 1 AND (a, b) <= (3, 100)",
                "Row range scan: p = 1 AND (a, b) <= (3, 100)",
            ),
            (
                "p = 1 AND (b, a) <= (3, 100)",
                "Row range scan: p = 1 + residual",
            ),
        ] {
            assert_eq!(spec(&kv, sql), want, "WHERE {sql}");
        }
        let h = table("CREATE TABLE h (a int, b int, c int, PRIMARY KEY ((a) HASH, b))");
        let cases = [
            ("a = 1 AND b = 2", "Point: a = 1 AND b = 2"),
            ("a = 1", "Row range scan: a = 1"),
            (
                "a = 1 AND (b = 2 OR b = 3)",
                "Multi-point (2 keys): a = 1 AND b IN (2, 3)",
            ),
            (
                "a > 1",
                "Partition range scan (fan-out over 16 hash buckets): a > 1",
            ),
            ("c = 1", "Full table scan + residual"),
        ];
        for (sql, want) in cases {
            assert_eq!(spec(&h, sql), want, "WHERE {sql}");
        }
    }

    #[test]
    fn nothing_is_greater_than_the_largest_value() {
        let t = table("CREATE TABLE m (a smallint, b int, PRIMARY KEY ((a), b))");
        let schema = datafusion::common::DFSchema::try_from(def_schema(&t)).unwrap();
        let ctx = SessionContext::new();
        let expr = simplify(ctx.parse_sql_expr("a > 32767", &schema).unwrap(), &schema);
        let s = classify(&t, &[expr]);
        let layout = t.layout().unwrap();
        let key = layout
            .encode(&[storage::Value::Int2(32767)], &[storage::Value::Int4(1)])
            .unwrap();
        assert!(!s.ranges.iter().any(|r| r.contains(&key)), "{s:?}");
        let v = table("CREATE TABLE v (k varchar(2) PRIMARY KEY)");
        assert_eq!(spec(&v, "k = 'ab   '"), "Full table scan + residual");
        assert_eq!(spec(&v, "k = 'ab'"), "Point: k = 'ab'");
    }

    #[test]
    fn desc_ranges_cover_the_right_keys() {
        let t = table("CREATE TABLE ev (dev text, ts bigint, PRIMARY KEY ((dev), ts DESC))");
        let layout = t.layout().unwrap();
        let key = |ts: i64| {
            layout
                .encode(
                    &[storage::Value::Text("a".into())],
                    &[storage::Value::Int8(ts)],
                )
                .unwrap()
        };
        let schema = datafusion::common::DFSchema::try_from(def_schema(&t)).unwrap();
        let ctx = SessionContext::new();
        for (cond, inside) in [
            ("ts > 100", vec![101, 500]),
            ("ts >= 100 AND ts < 200", vec![100, 199]),
            ("ts <= 100", vec![100, -5]),
        ] {
            let expr = simplify(
                ctx.parse_sql_expr(&format!("dev = 'a' AND {cond}"), &schema)
                    .unwrap(),
                &schema,
            );
            let s = classify(&t, &[expr]);
            assert_eq!(s.ranges.len(), 1);
            for ts in [-5i64, 99, 100, 101, 199, 200, 500] {
                let expected = inside.contains(&ts)
                    || match cond {
                        "ts > 100" => ts > 100,
                        "ts >= 100 AND ts < 200" => (100..200).contains(&ts),
                        _ => ts <= 100,
                    };
                assert_eq!(s.ranges[0].contains(&key(ts)), expected, "{cond} at {ts}");
            }
        }
    }
}
