//! PostgreSQL functions written in terms of what DataFusion plans, on the parsed statement:
//!
//! - `date(x)` is `x::date`, `mod(a, b)` is `a % b`, `sign(x)` `signum(x)`, `every(x)` `bool_and(x)`,
//!   `variance(x)` `var_samp(x)`, `ceiling(x)` `ceil(x)`, `array_remove` `array_remove_all`,
//!   `a && b` `array_has_any(a, b)`, `gen_random_uuid()` `uuid()::uuid`;
//! - `num_nulls(…)` and `num_nonnulls(…)` count with CASE;
//! - `format`, `quote_literal` and `quote_nullable` read their arguments as text (their
//!   text output, as PostgreSQL's `anyelement` versions do);
//! - `percentile_disc(f) WITHIN GROUP (ORDER BY x)` picks from `array_agg(x ORDER BY x)`
//!   (`percentile_cont` interpolates in it, as PostgreSQL does),
//!   and `mode()` (`partita_mode`) the value of its longest run;
//! - an ordered or DISTINCT `string_agg(x, ',')` is `array_to_string(array_agg(…) FILTER
//!   (WHERE x IS NOT NULL), ',')`, which DataFusion plans beside other orders;
//! - `age(t)` is `age(current_date::timestamp, t)`; `make_interval`'s named arguments
//!   become its seven positional ones;
//! - `to_date(s, template)` and `to_timestamp(s, template)` read PostgreSQL templates
//!   (`datetime`), the latter as a timestamptz in the session's zone;
//! - `x SIMILAR TO p` is `x ~ partita_similar_regex(p)`, `substring(s FROM 'pattern')` the
//!   matched part (`regex`);
//! - the prefix operators `|/`, `||/`, `@` are sqrt, cbrt, abs; LOCALTIMESTAMP is
//!   `now()::timestamp`; `array_lower(a, d)` is 1 for a dimension with elements;
//! - `generate_series(a, b, '1 day')` steps by an interval, over timestamptz for dates;
//! - `EXTRACT(f FROM x)` is `partita_extract('f', x)` (`extract`), `t AT TIME ZONE z` is
//!   `timezone(z, t)` (`datetime`); `make_timestamptz` is `make_timestamp` read in a zone,
//!   and `date_trunc(f, t, zone)` truncates `t` as a local time of `zone`.
//!
//! - comparisons of row constructors, `(a, b) < (1, 2)`, compare field by field
//!   (`row_comparison`).
//!
//! A select-list item rewritten here keeps the name PostgreSQL gives the call it was.

use super::datetime::{MAKE_INTERVAL, MAKE_INTERVAL_PARAMETERS, TO_DATE, TO_TIMESTAMP};
use super::regex::{SIMILAR, SUBSTRING};
use crate::pg_catalog::call;
use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, CastKind, DataType, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Ident, ObjectName, SelectItem, Statement, TimezoneInfo, Value, VisitMut,
    VisitorMut,
};
use std::ops::ControlFlow;

/// The columns of a derived table or WITH query named as PostgreSQL names them, so that the
/// query around can read them: `SELECT count FROM (SELECT count(*) FROM t) q`. DataFusion
/// would name that column `count(*)`. A name two items would share, or any item beside a
/// `*` (whose columns are not known here), is left as DataFusion gives it.
fn name_columns(query: &mut ast::Query) {
    let select = match query.body.as_mut() {
        ast::SetExpr::Select(select) => select,
        ast::SetExpr::SetOperation { left, .. } => {
            let mut left = left.as_mut();
            loop {
                match left {
                    ast::SetExpr::SetOperation { left: l, .. } => left = l.as_mut(),
                    ast::SetExpr::Select(select) => break select,
                    ast::SetExpr::Query(q) => return name_columns(q),
                    _ => return,
                }
            }
        }
        ast::SetExpr::Query(q) => return name_columns(q),
        _ => return,
    };
    let names: Option<Vec<String>> = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) => {
                Some(crate::naming::pg_column_name(e).unwrap_or_else(|| "?column?".into()))
            }
            SelectItem::ExprWithAlias { alias, .. } => Some(sql::ddl::normalize_ident(alias)),
            _ => None,
        })
        .collect();
    let Some(names) = names else {
        return;
    };
    for (item, name) in select.projection.iter_mut().zip(&names) {
        let SelectItem::UnnamedExpr(e) = item else {
            continue;
        };
        if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
            || names.iter().filter(|n| *n == name).count() > 1
        {
            continue;
        }
        *item = SelectItem::ExprWithAlias {
            expr: e.clone(),
            alias: Ident::with_quote('"', name.clone()),
        };
    }
}

/// Named windows (`WINDOW w AS (…)`) written into the calls that refine them, as PostgreSQL
/// reads `OVER (w ORDER BY x)` and `WINDOW w2 AS (w ORDER BY x)`: w's PARTITION BY, with the
/// ORDER BY and frame given there when w has none. DataFusion takes such a call's own
/// clauses alone, losing w's partitions.
fn inline_named_windows(select: &mut ast::Select) {
    use ast::{NamedWindowDefinition, NamedWindowExpr, WindowSpec, WindowType};
    if select.named_window.is_empty() {
        return;
    }
    fn refine(defined: &[(String, WindowSpec)], spec: &WindowSpec) -> WindowSpec {
        let base = spec.window_name.as_ref().and_then(|name| {
            let name = sql::ddl::normalize_ident(name);
            defined.iter().find(|(n, _)| *n == name).map(|(_, s)| s)
        });
        let Some(base) = base else {
            return spec.clone();
        };
        let mut refined = base.clone();
        if !spec.partition_by.is_empty() {
            refined.partition_by = spec.partition_by.clone();
        }
        if !spec.order_by.is_empty() {
            refined.order_by = spec.order_by.clone();
        }
        if spec.window_frame.is_some() {
            refined.window_frame = spec.window_frame.clone();
        }
        refined
    }
    let mut defined: Vec<(String, WindowSpec)> = Vec::new();
    for NamedWindowDefinition(name, expr) in &mut select.named_window {
        let spec = match expr {
            NamedWindowExpr::WindowSpec(spec) => refine(&defined, spec),
            NamedWindowExpr::NamedWindow(other) => refine(
                &defined,
                &WindowSpec {
                    window_name: Some(other.clone()),
                    partition_by: vec![],
                    order_by: vec![],
                    window_frame: None,
                },
            ),
        };
        *expr = NamedWindowExpr::WindowSpec(spec.clone());
        defined.push((sql::ddl::normalize_ident(name), spec));
    }
    let _ = ast::visit_expressions_mut(&mut select.projection, |e| {
        if let Expr::Function(f) = e
            && let Some(WindowType::WindowSpec(spec)) = &mut f.over
            && spec.window_name.is_some()
        {
            *spec = refine(&defined, spec);
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The fields of a row constructor, `(a, b)` or `ROW(a, b)`.
pub(crate) fn row_fields(e: &Expr) -> Option<Vec<Expr>> {
    match e {
        Expr::Tuple(items) => Some(items.clone()),
        Expr::Function(f)
            if f.name.0.len() == 1
                && f.name.0[0]
                    .as_ident()
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("row")) =>
        {
            let FunctionArguments::List(list) = &f.args else {
                return None;
            };
            list.args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                    _ => None,
                })
                .collect()
        }
        _ => None,
    }
}

/// The most rows a row-valued IN list may have to be compared field by field.
const ROW_IN_LIST_EXPANDED_MAX: usize = 16;

/// A comparison of row constructors as PostgreSQL evaluates it, field by field, so that a
/// NULL field makes the answer NULL where it decides it (DataFusion's struct comparison
/// takes two NULLs as equal):
/// - `=` is every field equal, `<>` some field unequal, IS [NOT] DISTINCT FROM the same
///   with those operators;
/// - `<`, `<=`, `>`, `>=` decide by the first unequal field;
/// - `r [NOT] IN (r1, r2, …)` is `r = r1 OR r = r2 …` (`NOT`: `r <> r1 AND …`), for lists
///   of up to `ROW_IN_LIST_EXPANDED_MAX` rows;
/// - `r IS NULL` is every field NULL, `r IS NOT NULL` every field not NULL.
fn row_comparison(e: &Expr) -> Option<Expr> {
    fn binary(left: Expr, op: BinaryOperator, right: Expr) -> Expr {
        Expr::BinaryOp {
            left: Box::new(left),
            op,
            right: Box::new(right),
        }
    }
    let both = |a: Vec<Expr>, b: Vec<Expr>, op: BinaryOperator| -> Vec<Expr> {
        a.into_iter()
            .zip(b)
            .map(|(l, r)| binary(l, op.clone(), r))
            .collect()
    };
    let join = |parts: Vec<Expr>, op: BinaryOperator| {
        parts
            .into_iter()
            .reduce(|l, r| binary(l, op.clone(), r))
            .map(|e| Expr::Nested(Box::new(e)))
    };
    let pair = |l: &Expr, r: &Expr| {
        let (a, b) = (row_fields(l)?, row_fields(r)?);
        (a.len() == b.len() && !a.is_empty()).then_some((a, b))
    };
    let compare = |a: Vec<Expr>, b: Vec<Expr>, op: &BinaryOperator| -> Option<Expr> {
        use BinaryOperator::*;
        match op {
            Eq => join(both(a, b, Eq), And),
            NotEq => join(both(a, b, NotEq), Or),
            Lt | LtEq | Gt | GtEq => {
                let strict = match op {
                    Lt | LtEq => Lt,
                    _ => Gt,
                };
                // From the last field out: l < r OR (l = r AND <the rest decides>).
                let mut fields = a.into_iter().zip(b).rev();
                let (l, r) = fields.next()?;
                let mut decided = binary(l, op.clone(), r);
                for (l, r) in fields {
                    let unequal = binary(l.clone(), strict.clone(), r.clone());
                    let equal = binary(l, Eq, r);
                    decided =
                        Expr::Nested(Box::new(binary(unequal, Or, binary(equal, And, decided))));
                }
                Some(decided)
            }
            _ => None,
        }
    };
    match e {
        Expr::BinaryOp { left, op, right } => {
            let (a, b) = pair(left, right)?;
            compare(a, b, op)
        }
        Expr::IsDistinctFrom(l, r) | Expr::IsNotDistinctFrom(l, r) => {
            let (a, b) = pair(l, r)?;
            let parts = a
                .into_iter()
                .zip(b)
                .map(|(l, r)| match e {
                    Expr::IsDistinctFrom(..) => Expr::IsDistinctFrom(Box::new(l), Box::new(r)),
                    _ => Expr::IsNotDistinctFrom(Box::new(l), Box::new(r)),
                })
                .collect();
            match e {
                Expr::IsDistinctFrom(..) => join(parts, BinaryOperator::Or),
                _ => join(parts, BinaryOperator::And),
            }
        }
        // A long list stays DataFusion's IN of structs: its expansion plans in time that
        // grows faster than the list, and its depth overflows the stack.
        Expr::InList {
            expr,
            list,
            negated,
        } if list.len() <= ROW_IN_LIST_EXPANDED_MAX => {
            let (op, combine) = match negated {
                false => (BinaryOperator::Eq, BinaryOperator::Or),
                true => (BinaryOperator::NotEq, BinaryOperator::And),
            };
            let parts = list
                .iter()
                .map(|item| {
                    let (a, b) = pair(expr, item)?;
                    compare(a, b, &op)
                })
                .collect::<Option<Vec<_>>>()?;
            join(parts, combine)
        }
        Expr::IsNull(row) | Expr::IsNotNull(row) => {
            let fields = row_fields(row)?;
            let parts = fields
                .into_iter()
                .map(|f| match e {
                    Expr::IsNull(_) => Expr::IsNull(Box::new(f)),
                    _ => Expr::IsNotNull(Box::new(f)),
                })
                .collect();
            join(parts, BinaryOperator::And)
        }
        _ => None,
    }
}

/// Applies the rewrites above to `stmt`.
pub fn rewrite(stmt: &mut Statement) {
    let _ = stmt.visit(&mut Rewriter::default());
}

#[derive(Default)]
struct Rewriter {
    /// For each SELECT being visited, its items' names before the rewrite.
    names: Vec<Vec<Option<String>>>,
}

impl VisitorMut for Rewriter {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut ast::Select) -> ControlFlow<()> {
        inline_named_windows(select);
        // GROUP BY (): one group of every row, as GROUPING SETS (()) makes it (DataFusion
        // refuses the empty tuple).
        if let ast::GroupByExpr::Expressions(exprs, _) = &mut select.group_by
            && let [Expr::Tuple(items)] = exprs.as_mut_slice()
            && items.is_empty()
        {
            exprs[0] = Expr::GroupingSets(vec![vec![]]);
        }
        self.names.push(
            select
                .projection
                .iter()
                .map(|item| match item {
                    SelectItem::UnnamedExpr(e) => crate::naming::pg_column_name(e),
                    _ => None,
                })
                .collect(),
        );
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut ast::Select) -> ControlFlow<()> {
        let names = self.names.pop().unwrap_or_default();
        for (item, before) in select.projection.iter_mut().zip(names) {
            let SelectItem::UnnamedExpr(e) = item else {
                continue;
            };
            // An operator rewritten as a call is still "?column?".
            if crate::naming::pg_column_name(e) != before {
                *item = SelectItem::ExprWithAlias {
                    expr: e.clone(),
                    alias: Ident::with_quote('"', before.unwrap_or_else(|| "?column?".into())),
                };
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        if let Some(with) = &mut query.with {
            for cte in &mut with.cte_tables {
                name_columns(&mut cte.query);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut ast::TableFactor) -> ControlFlow<()> {
        if let ast::TableFactor::Derived { subquery, .. } = factor {
            name_columns(subquery);
        }
        if let ast::TableFactor::Table {
            name,
            args: Some(args),
            ..
        } = factor
            && name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .is_some_and(|i| i.value.eq_ignore_ascii_case("generate_series"))
        {
            series_args(&mut args.args);
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Some(rewritten) = overlaps(e).or_else(|| like_any(e)) {
            *e = rewritten;
            return ControlFlow::Continue(());
        }
        // substring(text FROM 'pattern') (or substring(text, 'pattern')): the part the
        // regular expression matches. (`substr` takes only positions.)
        if let Expr::Substring {
            expr,
            substring_from: Some(from),
            substring_for: None,
            shorthand: false,
            ..
        } = e
            && matches!(from.as_ref(), Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
        {
            *e = call(SUBSTRING, vec![(**expr).clone(), (**from).clone()]);
            return ControlFlow::Continue(());
        }
        if let Some(expanded) = row_comparison(e) {
            *e = expanded;
            return ControlFlow::Continue(());
        }
        // PostgreSQL's prefix operators: |/ square root, ||/ cube root, @ absolute value.
        if let Expr::UnaryOp { op, expr } = e {
            let function = match op {
                ast::UnaryOperator::PGSquareRoot => "sqrt",
                ast::UnaryOperator::PGCubeRoot => "cbrt",
                ast::UnaryOperator::PGAbs => "abs",
                _ => return ControlFlow::Continue(()),
            };
            *e = call(function, vec![(**expr).clone()]);
            return ControlFlow::Continue(());
        }
        // `a && b` of arrays: whether they share an element.
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::PGOverlap,
            right,
        } = e
        {
            *e = call("array_has_any", vec![(**left).clone(), (**right).clone()]);
            return ControlFlow::Continue(());
        }
        if let Expr::AtTimeZone {
            timestamp,
            time_zone,
        } = e
        {
            // A quoted timestamp is a timestamptz there, as PostgreSQL resolves it.
            let mut timestamp = (**timestamp).clone();
            if matches!(&timestamp, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
            {
                timestamp = cast(
                    timestamp,
                    DataType::Timestamp(None, TimezoneInfo::WithTimeZone),
                );
            }
            *e = call("timezone", vec![(**time_zone).clone(), timestamp]);
            return ControlFlow::Continue(());
        }
        if let Expr::Extract { field, expr, .. } = e {
            let field = string(&field.to_string().to_ascii_lowercase());
            *e = call(super::EXTRACT, vec![field, (**expr).clone()]);
            return ControlFlow::Continue(());
        }
        // LIKE … ESCAPE 'c' (SQLAlchemy's autoescape uses '/'): the pattern rewritten with
        // the backslash escape DataFusion's LIKE takes; a constant one here, so that a key
        // prefix can still be read from it.
        if let Expr::Like {
            pattern,
            escape_char: escape_char @ Some(_),
            ..
        }
        | Expr::ILike {
            pattern,
            escape_char: escape_char @ Some(_),
            ..
        } = e
            && let Some(Value::SingleQuotedString(escape)) = escape_char.as_ref().map(|v| &v.value)
            && escape != "\\"
        {
            let constant = match &pattern.as_ref() {
                Expr::Value(v) => match &v.value {
                    Value::SingleQuotedString(text) => {
                        super::regex::backslash_pattern(text, escape).ok()
                    }
                    _ => None,
                },
                _ => None,
            };
            **pattern = match constant {
                Some(text) => string(&text),
                None => call(
                    super::regex::LIKE_ESCAPE,
                    vec![(**pattern).clone(), string(escape)],
                ),
            };
            *escape_char = None;
            return ControlFlow::Continue(());
        }
        if let Expr::SimilarTo {
            negated,
            expr,
            pattern,
            escape_char,
        } = e
        {
            let mut args = vec![(**pattern).clone()];
            if let Some(escape) = escape_char {
                args.push(Expr::Value(escape.clone()));
            }
            *e = Expr::BinaryOp {
                left: expr.clone(),
                op: if *negated {
                    BinaryOperator::PGRegexNotMatch
                } else {
                    BinaryOperator::PGRegexMatch
                },
                right: Box::new(call(SIMILAR, args)),
            };
            return ControlFlow::Continue(());
        }
        // CURRENT_ROLE (a keyword, which the parser takes for a column) is current_user.
        if let Expr::Identifier(id) = e
            && id.quote_style.is_none()
            && id.value.eq_ignore_ascii_case("current_role")
        {
            *e = call("current_user", vec![]);
            return ControlFlow::Continue(());
        }
        // LOCALTIME (a keyword, which the parser takes for a column): the time of day of
        // LOCALTIMESTAMP.
        if let Expr::Identifier(id) = e
            && id.quote_style.is_none()
            && id.value.eq_ignore_ascii_case("localtime")
        {
            *e = cast(
                local_timestamp(None),
                DataType::Time(None, TimezoneInfo::None),
            );
            return ControlFlow::Continue(());
        }
        let Expr::Function(f) = e else {
            return ControlFlow::Continue(());
        };
        let Some(name) = f.name.0.last().and_then(|p| p.as_ident()) else {
            return ControlFlow::Continue(());
        };
        let name = name.value.to_ascii_lowercase();
        let FunctionArguments::List(list) = &mut f.args else {
            if matches!(f.args, FunctionArguments::None) {
                match name.as_str() {
                    "gen_random_uuid" => *e = cast(call("uuid", vec![]), uuid_type()),
                    "current_catalog" => *e = call("current_database", vec![]),
                    "localtimestamp" => *e = local_timestamp(None),
                    "localtime" => {
                        *e = cast(
                            local_timestamp(None),
                            DataType::Time(None, TimezoneInfo::None),
                        )
                    }
                    _ => {}
                }
            }
            return ControlFlow::Continue(());
        };
        let plain: Option<Vec<Expr>> = list
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Some(x.clone()),
                _ => None,
            })
            .collect();
        let rename = |f: &mut ast::Function, to: &str| {
            f.name = ObjectName::from(vec![Ident::new(to)]);
        };
        match (name.as_str(), plain) {
            ("generate_series", _) => series_args(&mut list.args),
            // make_timestamptz(y, m, d, h, mi, s [, zone]): the local timestamp read in the
            // zone given, else in the session's.
            ("make_timestamptz", Some(args)) if args.len() == 6 || args.len() == 7 => {
                let local = call("make_timestamp", args[..6].to_vec());
                *e = match args.get(6) {
                    Some(zone) => call("timezone", vec![zone.clone(), local]),
                    None => cast(local, DataType::Timestamp(None, TimezoneInfo::WithTimeZone)),
                };
            }
            // date_trunc(field, timestamptz, zone): truncated as a local time of that zone.
            ("date_trunc", Some(args)) if args.len() == 3 => {
                let mut at = args[1].clone();
                if matches!(&at, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
                {
                    at = cast(at, DataType::Timestamp(None, TimezoneInfo::WithTimeZone));
                }
                let local = call("timezone", vec![args[2].clone(), at]);
                let truncated = call("date_trunc", vec![args[0].clone(), local]);
                *e = call("timezone", vec![args[2].clone(), truncated]);
            }
            // CURRENT_TIMESTAMP(p) and LOCALTIMESTAMP(p): rounded to p digits.
            ("current_timestamp" | "localtimestamp", Some(args))
                if args.len() == 1
                    && matches!(&args[0], Expr::Value(v) if matches!(v.value, Value::Number(..))) =>
            {
                let digits = match &args[0] {
                    Expr::Value(v) => match &v.value {
                        Value::Number(n, _) => n.parse::<u64>().ok(),
                        _ => None,
                    },
                    _ => None,
                };
                *e = match name.as_str() {
                    "localtimestamp" => local_timestamp(digits),
                    _ => cast(
                        call("now", vec![]),
                        DataType::Timestamp(digits, TimezoneInfo::WithTimeZone),
                    ),
                };
            }
            ("percentile_disc", Some(args)) if args.len() == 1 && f.within_group.len() == 1 => {
                *e = percentile_disc(&args[0], &f.within_group[0], f.filter.as_deref());
            }
            ("percentile_cont", Some(args)) if args.len() == 1 && f.within_group.len() == 1 => {
                let mut order = f.within_group[0].clone();
                order.expr = cast(order.expr, DataType::DoublePrecision);
                let (collect, _) = sorted_values(&order, f.filter.as_deref());
                let fraction = cast(args[0].clone(), DataType::DoublePrecision);
                *e = call(super::PERCENTILE_CONT, vec![collect, fraction]);
            }
            ("mode", Some(args)) if args.is_empty() && f.within_group.len() == 1 => {
                let (collect, _) = sorted_values(&f.within_group[0], f.filter.as_deref());
                *e = call(super::MODE, vec![collect]);
            }
            // An ordered (or DISTINCT, which PostgreSQL sorts) string_agg is joined from
            // array_agg's list, which DataFusion plans beside aggregates of other orders (its
            // string_agg refuses those); NULLs are left out, and a group of none is NULL, as
            // string_agg's.
            ("string_agg", Some(args))
                if args.len() == 2
                    && f.over.is_none()
                    && matches!(&args[1], Expr::Value(v)
                        if matches!(v.value, Value::SingleQuotedString(_) | Value::EscapedStringLiteral(_)))
                    && (list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct)
                        || list
                            .clauses
                            .iter()
                            .any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)))) =>
            {
                // The values as text, as string_agg takes them (a char(n)'s without its
                // padding); DISTINCT orders by what it collects.
                let value = cast(args[0].clone(), DataType::Text);
                let distinct = list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct);
                let mut clauses: Vec<ast::FunctionArgumentClause> = list
                    .clauses
                    .iter()
                    .filter(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)))
                    .cloned()
                    .collect();
                if distinct {
                    for clause in &mut clauses {
                        if let ast::FunctionArgumentClause::OrderBy(items) = clause {
                            for item in items.iter_mut().filter(|i| i.expr == args[0]) {
                                item.expr = value.clone();
                            }
                        }
                    }
                }
                if clauses.is_empty() {
                    clauses.push(ast::FunctionArgumentClause::OrderBy(vec![
                        ast::OrderByExpr {
                            expr: value.clone(),
                            options: ast::OrderByOptions {
                                asc: None,
                                nulls_first: None,
                            },
                            with_fill: None,
                        },
                    ]));
                }
                let present = Expr::IsNotNull(Box::new(args[0].clone()));
                let filter = match f.filter.take() {
                    Some(given) => Expr::BinaryOp {
                        left: Box::new(Expr::Nested(given)),
                        op: BinaryOperator::And,
                        right: Box::new(present),
                    },
                    None => present,
                };
                let Expr::Function(mut collect) = call("array_agg", vec![value]) else {
                    unreachable!("call makes a function")
                };
                if let FunctionArguments::List(inner) = &mut collect.args {
                    inner.duplicate_treatment = list.duplicate_treatment;
                    inner.clauses = clauses;
                }
                collect.filter = Some(Box::new(filter));
                *e = call(
                    "array_to_string",
                    vec![Expr::Function(collect), args[1].clone()],
                );
            }
            // PostgreSQL collects DISTINCT values sorted, as it removes duplicates; programs
            // count on `string_agg(DISTINCT tag, ',')` being in order.
            ("array_agg" | "string_agg", Some(args))
                if !args.is_empty()
                    && list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct)
                    && !list
                        .clauses
                        .iter()
                        .any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_))) =>
            {
                list.clauses.push(ast::FunctionArgumentClause::OrderBy(vec![
                    ast::OrderByExpr {
                        expr: args[0].clone(),
                        options: ast::OrderByOptions {
                            asc: None,
                            nulls_first: None,
                        },
                        with_fill: None,
                    },
                ]));
            }
            // date(x): PostgreSQL's function for the cast to date.
            ("date", Some(args)) if args.len() == 1 => {
                *e = cast(args[0].clone(), DataType::Date);
            }
            ("every", _) => rename(f, "bool_and"),
            ("variance", _) => rename(f, "var_samp"),
            ("ceiling", _) => rename(f, "ceil"),
            // PostgreSQL's array_remove removes every copy.
            ("array_remove", _) => rename(f, "array_remove_all"),
            ("sign", Some(args)) if args.len() == 1 => rename(f, "signum"),
            ("mod", Some(args)) if args.len() == 2 => {
                *e = Expr::Nested(Box::new(Expr::BinaryOp {
                    left: Box::new(args[0].clone()),
                    op: BinaryOperator::Modulo,
                    right: Box::new(args[1].clone()),
                }));
            }
            // An empty array has no dimensions: its length is NULL, not 0. An integer, as
            // PostgreSQL's.
            ("array_length", Some(args)) if args.len() == 2 => {
                let length = cast(call("array_length", args), DataType::Integer(None));
                *e = call("nullif", vec![length, number("0")]);
            }
            // Arrays here start at 1: the lower bound of a dimension that has elements.
            ("array_lower", Some(args)) if args.len() == 2 => {
                let length = call("array_length", args);
                *e = cast(
                    Expr::Case {
                        case_token: ast::helpers::attached_token::AttachedToken::empty(),
                        end_token: ast::helpers::attached_token::AttachedToken::empty(),
                        operand: None,
                        conditions: vec![ast::CaseWhen {
                            condition: Expr::BinaryOp {
                                left: Box::new(length),
                                op: BinaryOperator::Gt,
                                right: Box::new(number("0")),
                            },
                            result: number("1"),
                        }],
                        else_result: None,
                    },
                    DataType::Integer(None),
                );
            }
            ("gen_random_uuid", Some(args)) if args.is_empty() => {
                *e = cast(call("uuid", vec![]), uuid_type());
            }
            // uuid-ossp's functions (`extensions`): uuids as text, read as uuid.
            (n, Some(args))
                if crate::extensions::UUID_FUNCTIONS
                    .iter()
                    .any(|&(f, arity)| f == n && arity == args.len()) =>
            {
                let args = args.into_iter().map(|a| cast(a, DataType::Text)).collect();
                *e = cast(call(&crate::extensions::planned_name(n), args), uuid_type());
            }
            ("num_nulls" | "num_nonnulls", Some(args)) if !args.is_empty() => {
                let counted = |x: &Expr| Expr::Case {
                    case_token: ast::helpers::attached_token::AttachedToken::empty(),
                    end_token: ast::helpers::attached_token::AttachedToken::empty(),
                    operand: None,
                    conditions: vec![ast::CaseWhen {
                        condition: if name == "num_nulls" {
                            Expr::IsNull(Box::new(x.clone()))
                        } else {
                            Expr::IsNotNull(Box::new(x.clone()))
                        },
                        result: number("1"),
                    }],
                    else_result: Some(Box::new(number("0"))),
                };
                let sum = args
                    .iter()
                    .map(counted)
                    .reduce(|a, b| Expr::BinaryOp {
                        left: Box::new(a),
                        op: BinaryOperator::Plus,
                        right: Box::new(b),
                    })
                    .unwrap_or_else(|| number("0"));
                *e = cast(Expr::Nested(Box::new(sum)), DataType::Integer(None));
            }
            ("quote_literal", Some(args)) if args.len() == 1 => {
                *e = call("quote_literal", vec![as_text(&args[0])]);
            }
            ("quote_nullable", Some(args)) if args.len() == 1 => {
                let quoted = call("quote_literal", vec![as_text(&args[0])]);
                *e = call("coalesce", vec![quoted, string("NULL")]);
            }
            ("format", Some(args)) if !args.is_empty() => {
                let mut texts = vec![args[0].clone()];
                texts.extend(args[1..].iter().map(as_text));
                *e = call("format", texts);
            }
            // age of timestamptz values (or of one, from today) counts on their fields in
            // the session's zone, as PostgreSQL's does: the timestamps they are there.
            ("age", Some(args)) if args.len() == 1 || args.len() == 2 => {
                let local = |e: Expr| cast(e, DataType::Timestamp(None, TimezoneInfo::None));
                let today = cast(
                    Expr::Function(ast::Function {
                        name: ObjectName::from(vec![Ident::new("current_date")]),
                        uses_odbc_syntax: false,
                        parameters: FunctionArguments::None,
                        args: FunctionArguments::None,
                        filter: None,
                        null_treatment: None,
                        over: None,
                        within_group: vec![],
                    }),
                    DataType::Timestamp(None, TimezoneInfo::None),
                );
                let (from, to) = match args.as_slice() {
                    [to] => (today, to.clone()),
                    [from, to, ..] => (from.clone(), to.clone()),
                    [] => return ControlFlow::Continue(()),
                };
                *e = call("age", vec![local(from), local(to)]);
            }
            ("make_interval", _) => {
                if let Some(args) = make_interval_args(&list.args) {
                    *e = call(MAKE_INTERVAL, args);
                }
            }
            ("to_date", Some(args)) if args.len() == 2 => *e = call(TO_DATE, args),
            // PostgreSQL's one to_timestamp of a number takes a float8. DataFusion's of an
            // integer counts the seconds from midnight in the session's zone, not UTC's.
            ("to_timestamp", Some(args)) if args.len() == 1 => {
                *e = call(
                    "to_timestamp",
                    vec![cast(args[0].clone(), DataType::DoublePrecision)],
                );
            }
            ("to_timestamp", Some(args)) if args.len() == 2 => {
                *e = cast(
                    call(TO_TIMESTAMP, args),
                    DataType::Timestamp(None, TimezoneInfo::WithTimeZone),
                );
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// `percentile_disc(f) WITHIN GROUP (ORDER BY x)`: the first value, in that order, at or
/// past fraction `f` of the non-NULL values: `(array_agg(x ORDER BY x) FILTER (WHERE x IS
/// NOT NULL))[greatest(ceil(f * count(x)), 1)]`.
fn percentile_disc(fraction: &Expr, order: &ast::OrderByExpr, filter: Option<&Expr>) -> Expr {
    let (collect, value) = sorted_values(order, filter);
    let Expr::Function(mut count) = call("count", vec![value]) else {
        unreachable!("call makes a function")
    };
    count.filter = filter.map(|f| Box::new(f.clone()));
    let position = call(
        "greatest",
        vec![
            cast(
                call(
                    "ceil",
                    vec![Expr::BinaryOp {
                        left: Box::new(cast(fraction.clone(), DataType::DoublePrecision)),
                        op: BinaryOperator::Multiply,
                        right: Box::new(Expr::Function(count)),
                    }],
                ),
                DataType::BigInt(None),
            ),
            number("1"),
        ],
    );
    call("array_element", vec![collect, position])
}

/// `array_agg(x ORDER BY …) FILTER (WHERE [filter AND] x IS NOT NULL)` of an ordered-set
/// aggregate's WITHIN GROUP, with `x`.
fn sorted_values(order: &ast::OrderByExpr, filter: Option<&Expr>) -> (Expr, Expr) {
    let value = order.expr.clone();
    let not_null = Expr::IsNotNull(Box::new(value.clone()));
    let condition = match filter {
        Some(f) => Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(f.clone()))),
            op: BinaryOperator::And,
            right: Box::new(not_null),
        },
        None => not_null,
    };
    let Expr::Function(mut collect) = call("array_agg", vec![value.clone()]) else {
        unreachable!("call makes a function")
    };
    if let FunctionArguments::List(list) = &mut collect.args {
        list.clauses = vec![ast::FunctionArgumentClause::OrderBy(vec![order.clone()])];
    }
    collect.filter = Some(Box::new(condition));
    (Expr::Function(collect), value)
}

/// `generate_series(start, stop, 'step')`: the quoted step is an interval, and date bounds
/// are timestamptz, as PostgreSQL resolves the call; timestamp bounds get their seconds.
fn series_args(args: &mut [FunctionArg]) {
    for arg in args.iter_mut() {
        // In FROM the bounds are evaluated without the analyzer, which reads a timestamp
        // written without seconds.
        if let FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::TypedString(t))) = arg
            && matches!(t.data_type, DataType::Timestamp(..))
            && let Value::SingleQuotedString(text) = &mut t.value.value
            && let Some(full) = crate::zone::with_seconds(text)
        {
            *text = full;
        }
    }
    // A quoted number steps numbers (`generate_series(1, 10, '2')`).
    if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(step))) = args.get_mut(2)
        && let Expr::Value(v) = step
        && let Value::SingleQuotedString(text) = &v.value
        && text.trim().parse::<f64>().is_ok()
    {
        *step = Expr::value(Value::Number(text.trim().to_string(), false));
    }
    // Integer constants are integers, so the series is one of integers, as in PostgreSQL
    // (a bigint one when a bound is a bigint).
    for arg in args.iter_mut() {
        if let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = arg {
            crate::semantics::int4_constant(x);
        }
    }
    if args.len() != 3 {
        return;
    }
    let step_is_text = matches!(
        &args[2],
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))
            if matches!(&v.value, Value::SingleQuotedString(s) if s.trim().parse::<f64>().is_err())
    );
    if !step_is_text {
        return;
    }
    for (i, arg) in args.iter_mut().enumerate() {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = arg else {
            continue;
        };

        let is_date = matches!(
            x,
            Expr::TypedString(t) if t.data_type == DataType::Date
        ) || matches!(
            x,
            Expr::Cast {
                data_type: DataType::Date,
                ..
            }
        );
        if i == 2 {
            *x = cast(
                x.clone(),
                DataType::Interval {
                    fields: None,
                    precision: None,
                },
            );
        } else if is_date {
            *x = cast(
                x.clone(),
                DataType::Timestamp(None, TimezoneInfo::WithTimeZone),
            );
        }
    }
}

/// `make_interval`'s arguments, positional or named (`days => 3`), as all seven in order
/// with the defaults (0) filled in; `None` for a name it does not have.
fn make_interval_args(args: &[FunctionArg]) -> Option<Vec<Expr>> {
    let mut out: Vec<Option<Expr>> = vec![None; MAKE_INTERVAL_PARAMETERS.len()];
    let parameter = |name: &str| {
        MAKE_INTERVAL_PARAMETERS
            .iter()
            .position(|p| p.eq_ignore_ascii_case(name))
    };
    for (i, arg) in args.iter().enumerate() {
        let (slot, value) = match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => (i, x),
            FunctionArg::Named {
                name,
                arg: FunctionArgExpr::Expr(x),
                ..
            } => (parameter(&name.value)?, x),
            FunctionArg::ExprNamed {
                name: Expr::Identifier(name),
                arg: FunctionArgExpr::Expr(x),
                ..
            } => (parameter(&name.value)?, x),
            _ => return None,
        };
        *out.get_mut(slot)? = Some(value.clone());
    }
    Some(
        out.into_iter()
            .map(|x| x.unwrap_or_else(|| number("0")))
            .collect(),
    )
}

/// LOCALTIMESTAMP[(p)]: the current time in the session's zone, without it.
fn local_timestamp(digits: Option<u64>) -> Expr {
    cast(
        call("now", vec![]),
        DataType::Timestamp(digits, TimezoneInfo::None),
    )
}

fn cast(expr: Expr, data_type: DataType) -> Expr {
    Expr::Cast {
        kind: CastKind::DoubleColon,
        expr: Box::new(expr),
        data_type,
        array: false,
        format: None,
    }
}

/// `expr`'s text as its type's output function writes it (`format`'s `%s` of true is `t`).
fn as_text(expr: &Expr) -> Expr {
    match expr {
        Expr::Function(f) if f.name.to_string() == crate::output::OUTPUT_TEXT => expr.clone(),
        _ => call(crate::output::OUTPUT_TEXT, vec![expr.clone()]),
    }
}

fn uuid_type() -> DataType {
    DataType::Uuid
}

fn number(n: &str) -> Expr {
    Expr::value(Value::Number(n.into(), false))
}

fn string(s: &str) -> Expr {
    Expr::value(Value::SingleQuotedString(s.into()))
}

/// `x [NOT] [I]LIKE ANY (ARRAY[p1, p2])`: whether some pattern matches (or fails to), as
/// `x LIKE p1 OR x LIKE p2`; DataFusion plans no LIKE ANY. (An array that is not written
/// out is left to it.)
fn like_any(e: &Expr) -> Option<Expr> {
    let (Expr::Like {
        negated,
        any: true,
        expr,
        pattern,
        escape_char,
    }
    | Expr::ILike {
        negated,
        any: true,
        expr,
        pattern,
        escape_char,
    }) = e
    else {
        return None;
    };
    let mut patterns = pattern.as_ref();
    while let Expr::Nested(inner) = patterns {
        patterns = inner;
    }
    let Expr::Array(array) = patterns else {
        return None;
    };
    let insensitive = matches!(e, Expr::ILike { .. });
    array
        .elem
        .iter()
        .map(|p| {
            let (expr, pattern) = (expr.clone(), Box::new(p.clone()));
            let (negated, any, escape_char) = (*negated, false, escape_char.clone());
            match insensitive {
                true => Expr::ILike {
                    negated,
                    any,
                    expr,
                    pattern,
                    escape_char,
                },
                false => Expr::Like {
                    negated,
                    any,
                    expr,
                    pattern,
                    escape_char,
                },
            }
        })
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::Or,
            right: Box::new(b),
        })
        .map(|any| Expr::Nested(Box::new(any)))
}

/// `(s1, e1) OVERLAPS (s2, e2)` as PostgreSQL computes it (`overlaps_timestamp`): each period
/// from its lesser end to its greater (an end that is an interval constant is the start plus
/// it), NULL where an end it needs is; periods that only touch do not overlap.
fn overlaps(e: &Expr) -> Option<Expr> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Overlaps,
        right,
    } = e
    else {
        return None;
    };
    let period = |side: &Expr| -> Option<(String, String)> {
        let Expr::Tuple(items) = side else {
            return None;
        };
        let [start, end] = items.as_slice() else {
            return None;
        };
        let interval = match end {
            Expr::Interval(_) => true,
            Expr::Cast { data_type, .. } => matches!(data_type, DataType::Interval { .. }),
            _ => false,
        };
        let end = match interval {
            true => format!("({start}) + ({end})"),
            false => format!("({end})"),
        };
        Some((format!("({start})"), end))
    };
    let ((s1, e1), (s2, e2)) = (period(left)?, period(right)?);
    let lesser = |s: &str, e: &str| {
        format!(
            "(CASE WHEN {s} IS NULL THEN {e} WHEN {e} IS NULL THEN {s} ELSE least({s}, {e}) END)"
        )
    };
    let greater = |s: &str, e: &str| {
        format!("(CASE WHEN {s} IS NULL OR {e} IS NULL THEN NULL ELSE greatest({s}, {e}) END)")
    };
    let (ts1, te1, ts2, te2) = (
        lesser(&s1, &e1),
        greater(&s1, &e1),
        lesser(&s2, &e2),
        greater(&s2, &e2),
    );
    let text = format!(
        "CASE WHEN {ts1} IS NULL OR {ts2} IS NULL THEN NULL \
         WHEN {ts1} > {ts2} THEN CASE WHEN {te2} IS NULL THEN NULL WHEN {ts1} < {te2} THEN true \
         WHEN {te1} IS NULL THEN NULL ELSE false END \
         WHEN {ts1} < {ts2} THEN CASE WHEN {te1} IS NULL THEN NULL WHEN {ts2} < {te1} THEN true \
         WHEN {te2} IS NULL THEN NULL ELSE false END \
         ELSE CASE WHEN {te1} IS NULL OR {te2} IS NULL THEN NULL ELSE true END END"
    );
    crate::dml::parse_expr(&text).ok()
}

#[cfg(test)]
mod tests {
    use crate::session::rewritten;

    #[test]
    fn calls_become_what_datafusion_plans_and_keep_their_names() {
        assert_eq!(
            rewritten("SELECT mod(a, 3), sign(b) AS s FROM t"),
            "SELECT (a % 3) AS \"mod\", signum(b) AS s FROM t"
        );
        assert_eq!(
            rewritten("SELECT 1 FROM t WHERE a SIMILAR TO 'x%'"),
            "SELECT 1 FROM t WHERE a ~ partita_similar_regex('x%')"
        );
        let formatted = rewritten("SELECT format('%s', 1)");
        assert_eq!(formatted, "SELECT format('%s', partita_text(1))");
        assert_eq!(rewritten(&formatted), formatted);
        // Read back from its text, a rewritten statement stays as it is.
        let once = rewritten("SELECT num_nulls(a, b) FROM t");
        assert_eq!(rewritten(&once), once);
    }
}
