//! Query forms DataFusion does not plan, written on the parsed statement as ones it does:
//!
//! - `FETCH FIRST n ROWS ONLY` is `LIMIT n`, `WITH TIES` a QUALIFY on the rows' rank (`PERCENT`
//!   is refused, 0A000);
//! - `(a, b) IN (SELECT x, y …)`, as a conjunct of WHERE or HAVING, is `EXISTS (SELECT 1
//!   FROM (SELECT x, y …) AS s(c1, c2) WHERE s.c1 = a AND s.c2 = b)` (DataFusion's IN takes
//!   one column; elsewhere, where its NULL would differ from EXISTS's false, it stays);
//! - `x IN (SELECT …)` in a select list is counts of the subquery's rows (`ScalarIn`);
//! - a window function in WHERE is PostgreSQL's 42P20;
//! - `CASE col WHEN 'text' …` compares the column with each value (`simple_case_of_column`).

use crate::error::{Error, Result};
use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, Expr, Ident, LimitClause, Query, SelectItem, SetExpr, Statement,
    TableAlias, TableAliasColumnDef, TableFactor, TableWithJoins, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};
use std::ops::ControlFlow;

/// The alias of the derived table a row-valued IN reads; its columns are `<alias>_<n>`.
const ROW_IN: &str = "__partita_in";

/// Rewrites the forms above in `stmt`.
pub fn rewrite(stmt: &mut Statement) -> Result<()> {
    match stmt.visit(&mut Rewriter) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Rewriter;

/// sqlparser reads the right operand of `IS [NOT] DISTINCT FROM` as a whole expression, so
/// `a IS DISTINCT FROM b AND c` became `a IS DISTINCT FROM (b AND c)`. PostgreSQL binds IS
/// tighter than NOT, AND and OR and reads IS left to right: the operand ends before the first
/// AND, OR or IS at its own level. An unparenthesized operand is put back so, and the AND,
/// OR or NOT the comparison sat under is put back above what it took (`p AND a IS DISTINCT
/// FROM b OR c` is `(p AND …) OR c`; see [`rotate`]).
pub fn distinct_from_precedence(stmt: &mut Statement) {
    struct Precedence;
    impl VisitorMut for Precedence {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let (Expr::IsDistinctFrom(_, right) | Expr::IsNotDistinctFrom(_, right)) = e else {
                return ControlFlow::Continue(());
            };
            if leftmost_operand(right).is_none() {
                return ControlFlow::Continue(());
            }
            // e = a IS DISTINCT FROM (L op R) becomes (a IS DISTINCT FROM L) op R, with the
            // comparison in L's place; the visit goes on into it, so nested cases unwind too.
            let placeholder = || Expr::value(ast::Value::Null);
            let mut outer = match e {
                Expr::IsDistinctFrom(_, right) | Expr::IsNotDistinctFrom(_, right) => {
                    std::mem::replace(right.as_mut(), placeholder())
                }
                _ => unreachable!(),
            };
            let Some(slot) = leftmost_operand(&mut outer) else {
                unreachable!()
            };
            let left_of_op = std::mem::replace(slot, placeholder());
            let mut comparison = std::mem::replace(e, placeholder());
            if let Expr::IsDistinctFrom(_, right) | Expr::IsNotDistinctFrom(_, right) =
                &mut comparison
            {
                **right = left_of_op;
            }
            if let Some(slot) = leftmost_operand(&mut outer) {
                *slot = comparison;
            }
            *e = outer;
            ControlFlow::Continue(())
        }

        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            rotate(e);
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Precedence);
}

/// `x AND (y OR z)`, `NOT (y AND z)` and `NOT (y OR z)` without parentheses, which sqlparser
/// never makes from a statement's text but the hoisting in [`distinct_from_precedence`] does,
/// as PostgreSQL's precedence reads them: `(x AND y) OR z`, `(NOT y) AND z`, `(NOT y) OR z`.
/// The new left operand is put right in turn.
fn rotate(e: &mut Expr) {
    let placeholder = || Expr::value(ast::Value::Null);
    match e {
        Expr::BinaryOp {
            op: BinaryOperator::And,
            right,
            ..
        } if matches!(
            right.as_ref(),
            Expr::BinaryOp {
                op: BinaryOperator::Or,
                ..
            }
        ) =>
        {
            let Expr::BinaryOp { left: x, right, .. } = std::mem::replace(e, placeholder()) else {
                return;
            };
            let Expr::BinaryOp {
                left: y, right: z, ..
            } = *right
            else {
                return;
            };
            let mut and = Expr::BinaryOp {
                left: x,
                op: BinaryOperator::And,
                right: y,
            };
            rotate(&mut and);
            *e = Expr::BinaryOp {
                left: Box::new(and),
                op: BinaryOperator::Or,
                right: z,
            };
        }
        Expr::UnaryOp {
            op: ast::UnaryOperator::Not,
            expr,
        } if matches!(
            expr.as_ref(),
            Expr::BinaryOp {
                op: BinaryOperator::And | BinaryOperator::Or,
                ..
            }
        ) =>
        {
            let Expr::UnaryOp { expr, .. } = std::mem::replace(e, placeholder()) else {
                return;
            };
            let Expr::BinaryOp {
                left: y,
                op,
                right: z,
            } = *expr
            else {
                return;
            };
            let mut not = Expr::UnaryOp {
                op: ast::UnaryOperator::Not,
                expr: y,
            };
            rotate(&mut not);
            *e = Expr::BinaryOp {
                left: Box::new(not),
                op,
                right: z,
            };
        }
        _ => {}
    }
}

/// The left operand of an unparenthesized operator that binds looser than IS (AND, OR) or is
/// another IS, which a preceding IS DISTINCT FROM must take as its own right operand's end.
fn leftmost_operand(e: &mut Expr) -> Option<&mut Expr> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And | BinaryOperator::Or,
            ..
        }
        | Expr::IsDistinctFrom(left, _)
        | Expr::IsNotDistinctFrom(left, _)
        | Expr::IsNull(left)
        | Expr::IsNotNull(left)
        | Expr::IsTrue(left)
        | Expr::IsNotTrue(left)
        | Expr::IsFalse(left)
        | Expr::IsNotFalse(left)
        | Expr::IsUnknown(left)
        | Expr::IsNotUnknown(left) => Some(left),
        _ => None,
    }
}

/// Puts each `IS [NOT] DISTINCT FROM` comparison in parentheses, so that the statement's
/// text, which some rewrites parse again, reads as the same tree (see
/// [`distinct_from_precedence`]).
pub fn parenthesize_distinct(stmt: &mut Statement) {
    struct Parenthesize {
        /// The next comparison visited is the one just put in parentheses.
        inside: bool,
    }
    impl VisitorMut for Parenthesize {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            match e {
                Expr::Nested(inner)
                    if matches!(
                        inner.as_ref(),
                        Expr::IsDistinctFrom(..) | Expr::IsNotDistinctFrom(..)
                    ) =>
                {
                    self.inside = true;
                }
                Expr::IsDistinctFrom(..) | Expr::IsNotDistinctFrom(..) if self.inside => {
                    self.inside = false;
                }
                Expr::IsDistinctFrom(..) | Expr::IsNotDistinctFrom(..) => {
                    let comparison = std::mem::replace(e, Expr::value(ast::Value::Null));
                    *e = Expr::Nested(Box::new(comparison));
                    self.inside = true;
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Parenthesize { inside: false });
}

/// The keyword a token is, when it is an unquoted word.
fn keyword(t: &Token) -> Option<datafusion::sql::sqlparser::keywords::Keyword> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    }
}

/// The first token at or after `from` that is not whitespace.
fn next(tokens: &[TokenWithSpan], from: usize) -> Option<usize> {
    (from..tokens.len()).find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
}

/// `trim(BOTH FROM x)` (also LEADING and TRAILING), which trims spaces and which sqlparser
/// does not read, as `trim(BOTH x)`, which it reads so.
pub fn trim_without_characters(tokens: &mut Vec<TokenWithSpan>) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    let mut i = 0;
    while i < tokens.len() {
        if keyword(&tokens[i].token) == Some(Keyword::TRIM)
            && let Some(open) = next(tokens, i + 1)
            && tokens[open].token == Token::LParen
            && let Some(side) = next(tokens, open + 1)
            && matches!(
                keyword(&tokens[side].token),
                Some(Keyword::BOTH | Keyword::LEADING | Keyword::TRAILING)
            )
            && let Some(from) = next(tokens, side + 1)
            && keyword(&tokens[from].token) == Some(Keyword::FROM)
        {
            tokens.remove(from);
        }
        i += 1;
    }
}

/// The function that marks a `BETWEEN SYMMETRIC` lower bound between the token rewrite and
/// the parsed statement.
const SYMMETRIC: &str = "__partita_symmetric";

/// `BETWEEN SYMMETRIC a AND b`, which sqlparser does not read, as `BETWEEN
/// __partita_symmetric(a) AND b`, for [`symmetric_between`] to finish; `BETWEEN ASYMMETRIC` is
/// plain BETWEEN. The lower bound ends at the first AND outside parentheses and CASE … END,
/// as it does in PostgreSQL's grammar.
pub fn mark_symmetric_between(tokens: &mut Vec<TokenWithSpan>) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    let mut i = 0;
    while i < tokens.len() {
        if keyword(&tokens[i].token) != Some(Keyword::BETWEEN) {
            i += 1;
            continue;
        }
        let Some(j) = next(tokens, i + 1) else {
            break;
        };
        match keyword(&tokens[j].token) {
            Some(Keyword::ASYMMETRIC) => {
                tokens.remove(j);
            }
            Some(Keyword::SYMMETRIC) => {
                let mut depth = 0i32;
                let mut end = None;
                for (k, t) in tokens.iter().enumerate().skip(j + 1) {
                    match &t.token {
                        Token::LParen | Token::LBracket => depth += 1,
                        Token::RParen | Token::RBracket => depth -= 1,
                        Token::SemiColon => break,
                        // CASE … END holds its own ANDs.
                        t if keyword(t) == Some(Keyword::CASE) => depth += 1,
                        t if keyword(t) == Some(Keyword::END) => depth -= 1,
                        t if depth == 0 && keyword(t) == Some(Keyword::AND) => {
                            end = Some(k);
                            break;
                        }
                        _ => {}
                    }
                    if depth < 0 {
                        break;
                    }
                }
                if let Some(end) = end {
                    tokens.insert(end, TokenWithSpan::wrap(Token::RParen));
                    tokens.splice(
                        j..=j,
                        [Token::make_word(SYMMETRIC, None), Token::LParen]
                            .into_iter()
                            .map(TokenWithSpan::wrap),
                    );
                }
            }
            _ => {}
        }
        i = j;
    }
}

/// `x BETWEEN __partita_symmetric(a) AND b` (see [`mark_symmetric_between`]) as `(x BETWEEN a
/// AND b OR x BETWEEN b AND a)`, and its NOT form as `NOT (…)`: true when x lies between
/// the bounds in either order, as PostgreSQL's BETWEEN SYMMETRIC is.
pub fn symmetric_between(stmt: &mut Statement) {
    struct Symmetric;
    impl VisitorMut for Symmetric {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let Expr::Between {
                expr,
                negated,
                low,
                high,
            } = e
            else {
                return ControlFlow::Continue(());
            };
            let Expr::Function(f) = low.as_ref() else {
                return ControlFlow::Continue(());
            };
            if f.name.to_string() != SYMMETRIC {
                return ControlFlow::Continue(());
            }
            let ast::FunctionArguments::List(list) = &f.args else {
                return ControlFlow::Continue(());
            };
            let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(low))] = list.args.as_slice()
            else {
                return ControlFlow::Continue(());
            };
            let between = |low: &Expr, high: &Expr| Expr::Between {
                expr: expr.clone(),
                negated: false,
                low: Box::new(low.clone()),
                high: Box::new(high.clone()),
            };
            let either = Expr::Nested(Box::new(Expr::BinaryOp {
                left: Box::new(between(low, high)),
                op: BinaryOperator::Or,
                right: Box::new(between(high, low)),
            }));
            *e = match negated {
                true => Expr::UnaryOp {
                    op: ast::UnaryOperator::Not,
                    expr: Box::new(either),
                },
                false => either,
            };
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Symmetric);
}

/// `CASE col WHEN 't' THEN …` (TypeORM's `CASE "ix"."indisunique" WHEN 't'`): PostgreSQL
/// reads each quoted WHEN value as the operand's type, DataFusion found no common type of
/// boolean and text. A column operand is compared with each value instead (`CASE WHEN col =
/// 't' THEN …`), where the comparison reads the text as the column's type; evaluating a
/// column more than once changes nothing.
fn simple_case_of_column(e: &mut Expr) {
    let Expr::Case {
        operand,
        conditions,
        ..
    } = e
    else {
        return;
    };
    let column = matches!(
        operand.as_deref(),
        Some(Expr::Identifier(_) | Expr::CompoundIdentifier(_))
    );
    let quoted = conditions.iter().any(|c| {
        matches!(&c.condition, Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_)))
    });
    if !column || !quoted {
        return;
    }
    let Some(operand) = operand.take() else {
        return;
    };
    for when in conditions.iter_mut() {
        let value = std::mem::replace(&mut when.condition, Expr::value(ast::Value::Null));
        when.condition = Expr::BinaryOp {
            left: operand.clone(),
            op: BinaryOperator::Eq,
            right: Box::new(value),
        };
    }
}

impl VisitorMut for Rewriter {
    type Break = Error;

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Error> {
        unnest_beside_same_name(factor);
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<Error> {
        if let Err(e) = distinct_order(query) {
            return ControlFlow::Break(e);
        }
        let Some(fetch) = query.fetch.take() else {
            return ControlFlow::Continue(());
        };
        if fetch.percent {
            return ControlFlow::Break(Error::Unsupported("FETCH … PERCENT".into()));
        }
        // FETCH FIRST ROW ONLY is one row.
        let quantity = fetch
            .quantity
            .unwrap_or_else(|| Expr::value(ast::Value::Number("1".into(), false)));
        if fetch.with_ties {
            return match with_ties(query, quantity) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            };
        }
        match &mut query.limit_clause {
            None => {
                query.limit_clause = Some(LimitClause::LimitOffset {
                    limit: Some(quantity),
                    offset: None,
                    limit_by: vec![],
                })
            }
            Some(LimitClause::LimitOffset { limit, .. }) if limit.is_none() => {
                *limit = Some(quantity)
            }
            Some(_) => {
                return ControlFlow::Break(Error::Syntax(
                    "syntax error: LIMIT and FETCH together".into(),
                ));
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut ast::Select) -> ControlFlow<Error> {
        if let Some(condition) = &select.selection
            && at_this_level(
                condition,
                |e| matches!(e, Expr::Function(f) if f.over.is_some()),
            )
        {
            return ControlFlow::Break(Error::Windowing(
                "window functions are not allowed in WHERE".into(),
            ));
        }
        for item in &mut select.projection {
            let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item
            else {
                continue;
            };
            let before = crate::naming::pg_column_name(e);
            let mut rewriter = ScalarIn::default();
            let _ = e.visit(&mut rewriter);
            if rewriter.changed
                && let SelectItem::UnnamedExpr(e) = item
            {
                *item = SelectItem::ExprWithAlias {
                    expr: e.clone(),
                    alias: Ident::with_quote('"', before.unwrap_or_else(|| "?column?".into())),
                };
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut ast::Select) -> ControlFlow<Error> {
        // Only where a condition's false and NULL mean the same (a conjunct of WHERE or
        // HAVING): EXISTS is never NULL, where a row-valued IN can be.
        for condition in [select.selection.as_mut(), select.having.as_mut()]
            .into_iter()
            .flatten()
        {
            conjuncts(condition);
        }
        ControlFlow::Continue(())
    }
}

/// A derived table whose select list unnests beside an item aliased as a column it reads
/// (TypeORM's foreign-key query: `SELECT UNNEST(c.conkey) AS parent, CASE WHEN
/// c.condeferred … END AS condeferred …`): DataFusion plans the unnest's input with both
/// `c.condeferred` and the alias `condeferred`, and refuses the pair as ambiguous. Such an
/// alias becomes an internal one, and the derived table's column list names every column
/// as before.
fn unnest_beside_same_name(factor: &mut TableFactor) {
    let TableFactor::Derived {
        subquery,
        alias: Some(alias),
        ..
    } = factor
    else {
        return;
    };
    let SetExpr::Select(select) = subquery.body.as_mut() else {
        return;
    };
    let mut unnests = false;
    let mut read = Vec::new();
    let mut names = Vec::new();
    for item in &select.projection {
        let (expr, name) = match item {
            SelectItem::UnnamedExpr(e) => (
                e,
                crate::naming::pg_column_name(e).unwrap_or_else(|| "?column?".into()),
            ),
            SelectItem::ExprWithAlias { expr, alias } => (expr, sql::ddl::normalize_ident(alias)),
            // A `*` selects columns not written here.
            _ => return,
        };
        let _ = ast::visit_expressions(expr, |e| {
            unnests |=
                matches!(e, Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("unnest"));
            ControlFlow::<()>::Continue(())
        });
        read.extend(sql::ddl::columns_read(expr));
        names.push(name);
    }
    let clashes = |i: usize| {
        matches!(select.projection[i], SelectItem::ExprWithAlias { .. })
            && read.contains(&names[i])
            && alias.columns.len() <= i
    };
    if !unnests || !(0..names.len()).any(clashes) || !alias.columns.is_empty() {
        return;
    }
    let clashing: Vec<usize> = (0..names.len()).filter(|&i| clashes(i)).collect();
    for i in clashing {
        if let SelectItem::ExprWithAlias { alias, .. } = &mut select.projection[i] {
            *alias = Ident::new(format!("__partita_unnest_{i}"));
        }
    }
    alias.columns = names
        .into_iter()
        .map(|name| TableAliasColumnDef {
            name: Ident::with_quote('"', name),
            data_type: None,
        })
        .collect();
}

/// Refuses, as PostgreSQL does (42P10), a SELECT DISTINCT ordered by a column it does not
/// select: which of a group's rows would give the order is undefined. An expression it does
/// select (`ORDER BY n + 1` of `SELECT DISTINCT n + 1`) is ordered by its output column's
/// number, which DataFusion plans; other cases are left to DataFusion's own check.
fn distinct_order(query: &mut Query) -> Result<()> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Ok(());
    };
    let Some(ast::Distinct::Distinct) = select.distinct else {
        return Ok(());
    };
    let Some(ast::OrderBy {
        kind: ast::OrderByKind::Expressions(keys),
        ..
    }) = &mut query.order_by
    else {
        return Ok(());
    };
    // The output columns' names, the columns the select list reads, and its expressions.
    let mut names = Vec::new();
    let mut exprs = Vec::new();
    for item in &select.projection {
        let expr = match item {
            SelectItem::UnnamedExpr(e) => {
                names.extend(crate::naming::pg_column_name(e));
                e
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                names.push(sql::ddl::normalize_ident(alias));
                expr
            }
            // A `*` selects columns not written here.
            _ => return Ok(()),
        };
        names.extend(sql::ddl::columns_read(expr));
        exprs.push(expr.to_string());
    }
    for key in keys {
        if let Expr::Value(_) = key.expr {
            continue;
        }
        let mut bare = &key.expr;
        while let Expr::Nested(inner) = bare {
            bare = inner;
        }
        if !matches!(bare, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
            && let Some(k) = exprs.iter().position(|e| *e == bare.to_string())
        {
            key.expr = Expr::value(ast::Value::Number((k + 1).to_string(), false));
            continue;
        }
        // A column the select list neither reads nor names cannot be among its values.
        if sql::ddl::columns_read(&key.expr)
            .iter()
            .any(|c| !names.contains(c))
        {
            return Err(Error::InvalidColumnReference(
                "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
            ));
        }
    }
    Ok(())
}

/// `… ORDER BY o OFFSET m FETCH FIRST n ROWS WITH TIES` as `… QUALIFY rank() OVER (ORDER BY
/// o) <= n + m ORDER BY o OFFSET m`: a row ranks within the first n + m when it is one of them
/// or ties with the last; OFFSET then skips the first m, as PostgreSQL's does.
fn with_ties(query: &mut Query, quantity: Expr) -> Result<()> {
    if matches!(&quantity, Expr::Value(v) if v.value == ast::Value::Null) {
        return Err(Error::InvalidRowCount(
            "row count cannot be null in FETCH FIRST ... WITH TIES clause".into(),
        ));
    }
    let order = match &query.order_by {
        Some(ast::OrderBy {
            kind: ast::OrderByKind::Expressions(list),
            ..
        }) if !list.is_empty() => list.clone(),
        _ => {
            return Err(Error::InvalidStatement(
                "WITH TIES cannot be specified without ORDER BY clause".into(),
            ));
        }
    };
    let offset = match &query.limit_clause {
        None => None,
        Some(LimitClause::LimitOffset {
            limit: None,
            offset,
            ..
        }) => offset.as_ref().map(|o| o.value.clone()),
        Some(_) => {
            return Err(Error::Syntax(
                "syntax error: LIMIT and FETCH together".into(),
            ));
        }
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(Error::Unsupported(
            "FETCH … WITH TIES over a set operation or VALUES".into(),
        ));
    };
    if select.distinct.is_some() {
        return Err(Error::Unsupported("FETCH … WITH TIES with DISTINCT".into()));
    }
    // The window orders by expressions: an output column's number or alias is its
    // expression. QUALIFY reads a name as the output column before the input one, so a key
    // that names an output column of another expression (`-m AS m … ORDER BY m`) would be
    // read twice; and a number before a `*` is unknown here.
    let fold = sql::ddl::normalize_ident;
    let aliases: Vec<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { expr, alias }
                if !matches!(expr, Expr::Identifier(c) if fold(c) == fold(alias)) =>
            {
                Some(fold(alias))
            }
            _ => None,
        })
        .collect();
    let unsupported = || Error::Unsupported("FETCH … WITH TIES ordered by this column".into());
    let mut keys = Vec::with_capacity(order.len());
    for mut o in order {
        o.expr = output_expr(&select.projection, &o.expr).unwrap_or(o.expr);
        if matches!(o.expr, Expr::Value(_)) {
            return Err(unsupported());
        }
        let mut shadowed = false;
        let _ = ast::visit_expressions(&o.expr, |e| {
            if let Expr::Identifier(id) = e {
                shadowed |= aliases.contains(&fold(id));
            }
            ControlFlow::<()>::Continue(())
        });
        if shadowed {
            return Err(unsupported());
        }
        keys.push(o.to_string());
    }
    // No row for a count of 0, as in PostgreSQL (the rows tied with the offset's last are
    // not the first 0).
    let count = format!("CAST(({quantity}) AS BIGINT)");
    let bound = match offset {
        Some(m) => format!("{count} + CAST(({m}) AS BIGINT) AND {count} > 0"),
        None => format!("{count} AND {count} > 0"),
    };
    let text = format!(
        "SELECT rank() OVER (ORDER BY {}) <= {bound}",
        keys.join(", ")
    );
    let Ok(Statement::Query(mut parsed)) =
        crate::session::parse_sql(&text).map(|mut s| s.remove(0))
    else {
        return Err(Error::Internal("WITH TIES rank".into()));
    };
    let SetExpr::Select(rank) = parsed.body.as_mut() else {
        return Err(Error::Internal("WITH TIES rank".into()));
    };
    let Some(SelectItem::UnnamedExpr(rank)) = rank.projection.pop() else {
        return Err(Error::Internal("WITH TIES rank".into()));
    };
    select.qualify = Some(match select.qualify.take() {
        Some(q) => Expr::BinaryOp {
            left: Box::new(q),
            op: BinaryOperator::And,
            right: Box::new(rank),
        },
        None => rank,
    });
    Ok(())
}

/// The expression of the select-list item ORDER BY `key` names: by number, or by an alias
/// that is not also a column.
fn output_expr(projection: &[SelectItem], key: &Expr) -> Option<Expr> {
    let fold = sql::ddl::normalize_ident;
    let item_expr = |item: &SelectItem| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e.clone()),
        _ => None,
    };
    match key {
        Expr::Value(v) => {
            let ast::Value::Number(n, _) = &v.value else {
                return None;
            };
            let n: usize = n.parse().ok()?;
            let before = projection.get(..n.checked_sub(1)?)?;
            if before.iter().any(|item| item_expr(item).is_none()) {
                return None;
            }
            projection.get(n - 1).and_then(item_expr)
        }
        Expr::Identifier(id) => projection.iter().find_map(|item| match item {
            SelectItem::ExprWithAlias { expr, alias }
                if fold(alias) == fold(id)
                    && !matches!(expr, Expr::Identifier(c) if fold(c) == fold(id)) =>
            {
                Some(expr.clone())
            }
            _ => None,
        }),
        _ => None,
    }
}

/// Whether `found` holds for a part of `e` outside its subqueries.
fn at_this_level(e: &Expr, found: impl Fn(&Expr) -> bool) -> bool {
    let mut any = false;
    crate::lateral::top_level_exprs(e, &mut |e| any |= found(e));
    any
}

/// `x [NOT] IN (SELECT …)` in a select list, where DataFusion plans it only as a condition,
/// as counts of the subquery's rows that DataFusion decorrelates, with IN's NULLs:
///
/// ```sql
/// CASE WHEN (SELECT count(*) FROM (…) AS s(c) WHERE s.c = x) > 0 THEN true
///      WHEN x IS NULL THEN CASE WHEN (SELECT count(*) FROM (…) AS s(c)) > 0 THEN NULL
///                               ELSE false END
///      WHEN (SELECT count(*) FROM (…) AS s(c) WHERE s.c IS NULL) > 0 THEN NULL
///      ELSE false END
/// ```
#[derive(Default)]
struct ScalarIn {
    depth: usize,
    changed: bool,
}

impl VisitorMut for ScalarIn {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        simple_case_of_column(e);
        let Expr::InSubquery {
            expr,
            subquery,
            negated,
        } = e
        else {
            return ControlFlow::Continue(());
        };
        if self.depth > 0 || matches!(expr.as_ref(), Expr::Tuple(_)) {
            return ControlFlow::Continue(());
        }
        let rows = format!("(SELECT count(*) FROM ({subquery}) AS {ROW_IN}({ROW_IN}_1)");
        let text = format!(
            "SELECT {not}(CASE WHEN {rows} WHERE {ROW_IN}.{ROW_IN}_1 = ({expr})) > 0 THEN true \
             WHEN ({expr}) IS NULL THEN CASE WHEN {rows}) > 0 THEN NULL ELSE false END \
             WHEN {rows} WHERE {ROW_IN}.{ROW_IN}_1 IS NULL) > 0 THEN NULL ELSE false END)",
            not = if *negated { "NOT " } else { "" },
        );
        let Ok(Statement::Query(query)) = crate::session::parse_sql(&text).map(|mut s| s.remove(0))
        else {
            return ControlFlow::Continue(());
        };
        if let SetExpr::Select(select) = *query.body
            && let Some(SelectItem::UnnamedExpr(counted)) = select.projection.into_iter().next()
        {
            *e = counted;
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// Rewrites the row-valued INs among the AND-ed parts of `condition`.
fn conjuncts(condition: &mut Expr) {
    match condition {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left);
            conjuncts(right);
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => row_in(other),
    }
}

/// `(a, b) IN (SELECT …)` as EXISTS (see the module comment).
fn row_in(e: &mut Expr) {
    let Expr::InSubquery {
        expr,
        subquery,
        negated: false,
    } = e
    else {
        return;
    };
    let Expr::Tuple(items) = expr.as_ref() else {
        return;
    };
    let column = |i: usize| Ident::new(format!("{ROW_IN}_{}", i + 1));
    let condition = items
        .iter()
        .enumerate()
        .map(|(i, item)| Expr::BinaryOp {
            left: Box::new(Expr::CompoundIdentifier(vec![
                Ident::new(ROW_IN),
                column(i),
            ])),
            op: BinaryOperator::Eq,
            right: Box::new(item.clone()),
        })
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::And,
            right: Box::new(b),
        });
    let Some(condition) = condition else {
        return;
    };
    let derived = TableFactor::Derived {
        lateral: false,
        subquery: subquery.clone(),
        alias: Some(TableAlias {
            explicit: true,
            name: Ident::new(ROW_IN),
            columns: (0..items.len())
                .map(|i| TableAliasColumnDef::from_name(column(i).value))
                .collect(),
            at: None,
        }),
        sample: None,
    };
    let Ok(Statement::Query(mut exists)) =
        crate::session::parse_sql("SELECT 1").map(|mut s| s.remove(0))
    else {
        return;
    };
    if let SetExpr::Select(select) = exists.body.as_mut() {
        select.projection = vec![SelectItem::UnnamedExpr(Expr::value(ast::Value::Number(
            "1".into(),
            false,
        )))];
        select.from = vec![TableWithJoins {
            relation: derived,
            joins: vec![],
        }];
        select.selection = Some(condition);
    }
    *e = Expr::Exists {
        subquery: exists,
        negated: false,
    };
}

#[cfg(test)]
mod tests {
    use crate::session::rewritten;

    #[test]
    fn forms_become_what_datafusion_plans() {
        assert_eq!(
            rewritten("SELECT a FROM t ORDER BY a OFFSET 1 ROWS FETCH FIRST 2 ROWS ONLY"),
            "SELECT a FROM t ORDER BY a LIMIT 2 OFFSET 1 ROWS"
        );
        assert_eq!(
            rewritten("SELECT a FROM t WHERE (a, b) IN (SELECT x, y FROM u)"),
            "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM (SELECT x, y FROM u) AS __partita_in \
             (__partita_in_1, __partita_in_2) WHERE __partita_in.__partita_in_1 = a AND \
             __partita_in.__partita_in_2 = b)"
        );
        assert_eq!(
            rewritten("SELECT a AS x FROM t ORDER BY x OFFSET 1 FETCH FIRST 2 ROWS WITH TIES"),
            "SELECT a AS x FROM t QUALIFY rank() OVER (ORDER BY a) <= CAST((2) AS BIGINT) + \
             CAST((1) AS BIGINT) AND CAST((2) AS BIGINT) > 0 ORDER BY x OFFSET 1"
        );
        assert!(crate::session::parse_sql("SELECT a FROM t FETCH FIRST 1 ROW WITH TIES").is_err());
    }
}

#[cfg(test)]
mod distinct_tests {
    #[test]
    fn distinct_from_binds_tighter_than_and() {
        assert_eq!(
            crate::session::rewritten("SELECT 1 IS DISTINCT FROM 2 AND true"),
            "SELECT (1 IS DISTINCT FROM 2) AND true"
        );
        // As it reads again.
        assert_eq!(
            crate::session::rewritten("SELECT (1 IS DISTINCT FROM 2) AND true"),
            "SELECT (1 IS DISTINCT FROM 2) AND true"
        );
        assert_eq!(
            crate::session::rewritten("SELECT p AND a IS NOT DISTINCT FROM b OR c"),
            "SELECT p AND (a IS NOT DISTINCT FROM b) OR c"
        );
        assert_eq!(
            crate::session::rewritten("SELECT NOT a IS DISTINCT FROM b AND c OR d"),
            "SELECT NOT (a IS DISTINCT FROM b) AND c OR d"
        );
        assert_eq!(
            crate::session::rewritten("SELECT x = a IS DISTINCT FROM b = c IS NULL"),
            "SELECT (x = a IS DISTINCT FROM b = c) IS NULL"
        );
    }
}
