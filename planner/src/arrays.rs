//! Arrays written as text, as PostgreSQL reads them: `'{1,2}'::int[]`, and `x = ANY($1)`
//! where `$1` is an array a driver sent as text (`{1,2}`) or with an array type Partita
//! binds as text.
//!
//! A cast from text to an array type becomes [`ArrayInput`] (see `casts::typed_input`). The
//! right side of `= ANY(…)` / `<> ALL(…)` that is a string or a parameter is rewritten on the
//! parsed statement ([`rewrite`]) into `partita_array_like(left, right)`, an array of the
//! left side's type, since PostgreSQL reads an untyped literal there as that array type.

use crate::Error;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{self, Expr, Statement, VisitMut, VisitorMut};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};
use std::ops::ControlFlow;
use std::sync::Arc;

/// A quoted literal beside an array in the array operators and functions (`tags @> '{a}'`,
/// `tags && '{a}'`, `tags || '{a}'`, `array_cat(tags, '{a}')`) is read as an array of the other side's element type,
/// as PostgreSQL reads an untyped literal as the other operand's type (comparisons and
/// `coalesce` are `casts::literal_operands`'). `@>` and `<@` with such a literal become
/// `array_has_all`, which DataFusion's planner makes of them only when both sides were
/// arrays already.
pub(crate) fn text_operands(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Result<Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, Operator};
    let element_of = |e: &Expr| match e.get_type(schema) {
        Ok(DataType::List(item) | DataType::LargeList(item)) => Some(item.data_type().clone()),
        _ => None,
    };
    let as_array = |text: &Expr, element: DataType| {
        datafusion::logical_expr::ScalarUDF::new_from_impl(ArrayInput::new(element))
            .call(vec![text.clone()])
    };
    // `tags || '{a}'`: PostgreSQL takes the literal for an array, where DataFusion planned
    // the append of an element. `||` and `array_append` are one function by now, so a
    // literal of array text (or any literal beside an array of non-text elements) is read as
    // an array; `array_append(tags, '{a}')`, which appends that text in PostgreSQL, is the
    // case this reads wrongly.
    if let Expr::ScalarFunction(f) = &expr
        && let ([list, text], "array_append") | ([text, list], "array_prepend") =
            (f.args.as_slice(), f.name())
        && let Some(element) = element_of(list)
        && let Some(literal) = literal_text(text)
        && (literal.trim_start().starts_with('{')
            || !matches!(
                element,
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            ))
    {
        let text = as_array(text, element);
        let (first, second) = match f.name() {
            "array_append" => (list.clone(), text),
            _ => (text, list.clone()),
        };
        return Ok(Transformed::yes(
            datafusion::functions_nested::expr_fn::array_concat(vec![first, second]),
        ));
    }
    if let Expr::ScalarFunction(f) = &expr
        && matches!(f.name(), "array_has_any" | "array_has_all" | "array_concat")
        && f.args.iter().any(is_text_literal)
        && let Some(element) = f.args.iter().find_map(element_of)
    {
        let mut f = f.clone();
        for arg in &mut f.args {
            if is_text_literal(arg) {
                *arg = as_array(arg, element.clone());
            }
        }
        return Ok(Transformed::yes(Expr::ScalarFunction(f)));
    }
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if !matches!(op, Operator::AtArrow | Operator::ArrowAt) {
        return Ok(Transformed::no(expr));
    }
    let (l, r) = (left.as_ref(), right.as_ref());
    let (left, right) = match (element_of(l), element_of(r)) {
        (Some(element), None) if is_text_literal(r) => (l.clone(), as_array(r, element)),
        (None, Some(element)) if is_text_literal(l) => (as_array(l, element), r.clone()),
        // A parameter's type is known only now (`tags @> $1`).
        (Some(_), _) | (_, Some(_)) => (l.clone(), r.clone()),
        _ => return Ok(Transformed::no(expr)),
    };
    use datafusion::functions_nested::expr_fn::array_has_all;
    Ok(Transformed::yes(match op {
        Operator::AtArrow => array_has_all(left, right),
        _ => array_has_all(right, left),
    }))
}

fn is_text_literal(e: &datafusion::logical_expr::Expr) -> bool {
    literal_text(e).is_some()
}

fn literal_text(e: &datafusion::logical_expr::Expr) -> Option<&str> {
    use datafusion::common::ScalarValue as S;
    match e {
        datafusion::logical_expr::Expr::Literal(
            S::Utf8(Some(text)) | S::Utf8View(Some(text)) | S::LargeUtf8(Some(text)),
            _,
        ) => Some(text),
        _ => None,
    }
}

/// Reads a one-dimensional array literal: `{a,"b c",NULL}`.
pub fn parse_text_array(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut items = Vec::new();
    if inner.trim().is_empty() {
        return Some(items);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut item = String::new();
        let quoted = chars.next_if_eq(&'"').is_some();
        if quoted {
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => item.push(chars.next()?),
                    c => item.push(c),
                }
            }
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
        } else {
            while let Some(c) = chars.next_if(|&c| c != ',') {
                match c {
                    '\\' => item.push(chars.next()?),
                    '{' | '}' | '"' => return None,
                    c => item.push(c),
                }
            }
            item = item.trim_end().to_string();
            if item.is_empty() {
                return None;
            }
        }
        items.push(match !quoted && item.eq_ignore_ascii_case("null") {
            true => None,
            false => Some(item),
        });
        match chars.next() {
            None => return Some(items),
            Some(',') => {}
            Some(_) => return None,
        }
    }
}

/// Reads text arrays (or takes arrays) as a list of `element`s.
pub(crate) fn to_list(value: &ArrayRef, element: &DataType) -> Result<ArrayRef> {
    let target = DataType::List(Arc::new(Field::new("item", element.clone(), true)));
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    if matches!(value.data_type(), DataType::List(_) | DataType::Null) {
        return Ok(cast_with_options(value, &target, &strict)?);
    }
    let text = datafusion::arrow::compute::cast(value, &DataType::Utf8)?;
    let text = text.as_string::<i32>();
    let mut lists = ListBuilder::new(StringBuilder::new());
    for r in 0..text.len() {
        if text.is_null(r) {
            lists.append(false);
            continue;
        }
        let items = parse_text_array(text.value(r)).ok_or_else(|| {
            DataFusionError::External(Box::new(Error::MalformedArray(text.value(r).to_string())))
        })?;
        for item in items {
            lists.values().append_option(item);
        }
        lists.append(true);
    }
    let lists: ArrayRef = Arc::new(lists.finish());
    Ok(cast_with_options(&lists, &target, &strict)?)
}

fn invoke(args: &ScalarFunctionArgs, value: usize, element: &DataType) -> Result<ColumnarValue> {
    Ok(match &args.args[value] {
        ColumnarValue::Scalar(s) => {
            let list = to_list(&s.to_array()?, element)?;
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&list, 0)?)
        }
        ColumnarValue::Array(a) => ColumnarValue::Array(to_list(a, element)?),
    })
}

fn list_field(name: &str, element: &DataType) -> FieldRef {
    Arc::new(Field::new(
        name,
        DataType::List(Arc::new(Field::new("item", element.clone(), true))),
        true,
    ))
}

/// A cast of text to `element[]`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ArrayInput {
    element: DataType,
    signature: Signature,
}

impl ArrayInput {
    pub fn new(element: DataType) -> ArrayInput {
        ArrayInput {
            element,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ArrayInput {
    fn name(&self) -> &str {
        "partita_array_in"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(list_field("", &self.element).data_type().clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        invoke(&args, 0, &self.element)
    }
}

/// `partita_array_like(like, value)`: `value` (array text, or an array) as an array of
/// `like`'s type.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ArrayLike {
    signature: Signature,
}

impl Default for ArrayLike {
    fn default() -> Self {
        ArrayLike {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ArrayLike {
    fn name(&self) -> &str {
        "partita_array_like"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        datafusion::common::internal_err!("return_field_from_args is used instead")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(list_field(
            self.name(),
            element_like(args.arg_fields[0].data_type()),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let element = element_like(args.arg_fields[0].data_type()).clone();
        invoke(&args, 1, &element)
    }
}

/// The element type an array compared with a value of type `t` has: `t`, with text as
/// Utf8 (a NULL's type as text).
pub(crate) fn element_like(t: &DataType) -> &DataType {
    match t {
        DataType::Null | DataType::Utf8View | DataType::LargeUtf8 => &DataType::Utf8,
        other => other,
    }
}

/// Whether `e` is a call of `generate_series` (not a window function).
fn is_series(e: &Expr) -> bool {
    matches!(e, Expr::Function(f) if f.over.is_none()
        && f.name.0.len() == 1
        && f.name.0[0]
            .as_ident()
            .is_some_and(|i| i.value.eq_ignore_ascii_case("generate_series")))
}

/// Replaces each `generate_series(…)` within `e` (through casts, operators and function
/// arguments) by `unnest(generate_series(…))`; whether there was one.
fn unnest_series_within(e: &mut Expr) -> bool {
    match e {
        _ if is_series(e) => {
            *e = crate::pg_catalog::call("unnest", vec![e.clone()]);
            true
        }
        Expr::Cast { expr, .. } | Expr::Nested(expr) | Expr::UnaryOp { expr, .. } => {
            unnest_series_within(expr)
        }
        Expr::BinaryOp { left, right, .. } => {
            let l = unnest_series_within(left);
            unnest_series_within(right) || l
        }
        Expr::Function(f)
            if !f
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .is_some_and(|i| i.value.eq_ignore_ascii_case("unnest")) =>
        {
            let ast::FunctionArguments::List(list) = &mut f.args else {
                return false;
            };
            let mut found = false;
            for arg in &mut list.args {
                if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg)) = arg {
                    found |= unnest_series_within(arg);
                }
            }
            found
        }
        _ => false,
    }
}

/// Rewrites `x op ANY(text)` and `x op ALL(text)` (a string or a parameter) into
/// `x op ANY(partita_array_like(x, text))`; and `generate_series(…)` as a select-list item,
/// which returns rows in PostgreSQL and an array in DataFusion, into
/// `unnest(generate_series(…)) AS generate_series`.
pub fn rewrite(stmt: &mut Statement) {
    struct Rewriter;
    impl VisitorMut for Rewriter {
        type Break = ();
        fn post_visit_select(&mut self, select: &mut ast::Select) -> ControlFlow<()> {
            for item in &mut select.projection {
                let (expr, alias) = match item {
                    ast::SelectItem::UnnamedExpr(e) => (e, None),
                    ast::SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.clone())),
                    _ => continue,
                };
                if !is_series(expr) {
                    // Inside an expression (`generate_series(…)::date`, `d - generate_series(0,
                    // 2)`): each row of the series in its place, named as PostgreSQL names
                    // the expression.
                    let name = crate::naming::pg_column_name(expr);
                    if unnest_series_within(expr)
                        && alias.is_none()
                        && let Some(name) = name
                    {
                        let expr = expr.clone();
                        *item = ast::SelectItem::ExprWithAlias {
                            expr,
                            alias: ast::Ident::new(name),
                        };
                    }
                    continue;
                }
                let unnested = crate::pg_catalog::call("unnest", vec![expr.clone()]);
                *item = ast::SelectItem::ExprWithAlias {
                    expr: unnested,
                    alias: alias.unwrap_or_else(|| ast::Ident::new("generate_series")),
                };
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let (Expr::AnyOp { left, right, .. } | Expr::AllOp { left, right, .. }) = e else {
                return ControlFlow::Continue(());
            };
            let text = matches!(
                right.as_ref(),
                Expr::Value(ast::ValueWithSpan {
                    value: ast::Value::SingleQuotedString(_)
                        | ast::Value::EscapedStringLiteral(_)
                        | ast::Value::Placeholder(_),
                    ..
                })
            );
            if text {
                let value = std::mem::replace(right.as_mut(), Expr::value(ast::Value::Null));
                **right =
                    crate::pg_catalog::call("partita_array_like", vec![(**left).clone(), value]);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Rewriter);
}

#[cfg(test)]
mod tests {
    use super::parse_text_array;

    #[test]
    fn text_arrays() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(parse_text_array("{a,b}"), Some(vec![s("a"), s("b")]));
        assert_eq!(
            parse_text_array(r#"{ "x y" , NULL,"q\"" }"#),
            Some(vec![s("x y"), None, s("q\"")])
        );
        assert_eq!(parse_text_array("{}"), Some(vec![]));
        assert_eq!(parse_text_array("a,b"), None);
        assert_eq!(parse_text_array("{a,,b}"), None);
    }

    #[test]
    fn any_of_text_is_an_array_of_the_left_type() {
        let mut stmt = crate::session::parse_sql(
            "SELECT 1 FROM t WHERE id = ANY($1) AND n <> ALL('{1}') AND m = ANY(ARRAY[1])",
        )
        .unwrap()
        .remove(0);
        super::rewrite(&mut stmt);
        assert_eq!(
            stmt.to_string(),
            "SELECT 1 FROM t WHERE id = ANY(partita_array_like(id, $1)) AND n <> ALL(partita_array_like(n, '{1}')) AND m = ANY(ARRAY[1])"
        );
        let mut stmt = crate::session::parse_sql(
            "SELECT generate_series(1, 3), generate_series(1, n) AS g FROM t",
        )
        .unwrap()
        .remove(0);
        super::rewrite(&mut stmt);
        assert_eq!(
            stmt.to_string(),
            "SELECT unnest(generate_series(1::INTEGER, 3::INTEGER)) AS generate_series, unnest(generate_series(1::INTEGER, n)) AS g FROM t"
        );
    }
}

/// The function an assignment to an array element (`SET tags[2] = 'x'`) becomes:
/// `partita_array_set(tags, 2, 'x')`.
pub(crate) const ARRAY_SET: &str = "partita_array_set";

/// The SQL standard's array types, `text ARRAY` and `int ARRAY[4]` (TypeORM writes them),
/// as PostgreSQL's `text[]` and `int[4]`, which sqlparser reads: an ARRAY after a type's
/// name (a type keyword, a word that is no keyword, a quoted name, or the `)` of `(n)`).
pub(crate) fn standard_array_types(tokens: &mut Vec<TokenWithSpan>) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    const TYPE_WORDS: &[&str] = &[
        "bigint",
        "bool",
        "boolean",
        "bytea",
        "char",
        "character",
        "date",
        "decimal",
        "double",
        "float",
        "float4",
        "float8",
        "int",
        "int2",
        "int4",
        "int8",
        "integer",
        "interval",
        "json",
        "jsonb",
        "numeric",
        "precision",
        "real",
        "smallint",
        "text",
        "time",
        "timestamp",
        "timestamptz",
        "uuid",
        "varchar",
        "varying",
        "zone",
    ];
    let mut i = 0;
    while i < tokens.len() {
        let is_array = matches!(&tokens[i].token,
            Token::Word(w) if w.keyword == Keyword::ARRAY && w.quote_style.is_none());
        let previous = |at: usize| {
            (0..at)
                .rev()
                .find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
        };
        let type_word = |j: usize| match &tokens[j].token {
            Token::Word(w) => {
                w.quote_style.is_some()
                    || w.keyword == Keyword::NoKeyword
                    || TYPE_WORDS.contains(&w.value.to_ascii_lowercase().as_str())
            }
            _ => false,
        };
        let after_type = previous(i).is_some_and(|j| match &tokens[j].token {
            // `varchar(20) ARRAY`: the `(` the `)` closes follows a type's name (not
            // `OPERATOR(pg_catalog.||) ARRAY[2]`).
            Token::RParen => {
                let mut depth = 0usize;
                let open = (0..j).rev().find(|&k| match tokens[k].token {
                    Token::RParen => {
                        depth += 1;
                        false
                    }
                    Token::LParen if depth == 0 => true,
                    Token::LParen => {
                        depth -= 1;
                        false
                    }
                    _ => false,
                });
                open.and_then(previous).is_some_and(|k| {
                    type_word(k)
                        && !matches!(&tokens[k].token,
                            Token::Word(w) if w.keyword == Keyword::OPERATOR)
                })
            }
            _ => type_word(j),
        });
        if !(is_array && after_type) {
            i += 1;
            continue;
        }
        let next =
            (i + 1..tokens.len()).find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)));
        let span = tokens[i].span;
        if next.is_some_and(|j| tokens[j].token == Token::LBracket) {
            tokens.remove(i);
        } else {
            tokens[i] = TokenWithSpan::new(Token::LBracket, span);
            tokens.insert(i + 1, TokenWithSpan::new(Token::RBracket, span));
            i += 2;
        }
    }
}

/// Rewrites `col[i] = value` in the SET lists of UPDATE and of ON CONFLICT DO UPDATE, which
/// sqlparser does not read, into `col = partita_array_set(col, (i), (value))`.
pub(crate) fn subscript_assignments(tokens: &mut Vec<TokenWithSpan>) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    let is = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let mut i = 0;
    while i < tokens.len() {
        if !is(&tokens[i].token, Keyword::SET) {
            i += 1;
            continue;
        }
        // The array is the target row's, named as the target is (an UPDATE … FROM's other
        // tables, an upsert's `excluded`, may have columns of that name).
        let target = update_target(tokens, i);
        // Columns assigned an element already in this list.
        let mut assigned: Vec<String> = Vec::new();
        // Each assignment of the SET list: `name [ … ] = value` up to a comma, WHERE,
        // RETURNING, FROM or the statement's end at depth 0.
        let mut at = i + 1;
        loop {
            let next = |from: usize| {
                (from..tokens.len()).find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
            };
            let Some(name) = next(at) else { break };
            let Token::Word(column) = tokens[name].token.clone() else {
                break;
            };
            let Some(open) = next(name + 1) else { break };
            if tokens[open].token != Token::LBracket {
                // A plain assignment: skip to the next one.
                match value_end(tokens, open) {
                    (end, true) => {
                        at = end + 1;
                        continue;
                    }
                    _ => break,
                }
            }
            let Some(close) =
                (open + 1..tokens.len()).find(|&j| tokens[j].token == Token::RBracket)
            else {
                break;
            };
            let Some(eq) = next(close + 1).filter(|&j| tokens[j].token == Token::Eq) else {
                break;
            };
            let (end, more) = value_end(tokens, eq + 1);
            // A second element of one array in one SET list would read the old array again
            // and lose the first: refused when it runs (`ArraySet`'s fourth argument).
            let again = assigned.contains(&column.value);
            assigned.push(column.value.clone());
            let index: Vec<Token> = tokens[open + 1..close]
                .iter()
                .map(|t| t.token.clone())
                .collect();
            let value: Vec<Token> = tokens[eq + 1..end]
                .iter()
                .map(|t| t.token.clone())
                .collect();
            let mut call = vec![
                Token::Word(column.clone()),
                Token::Whitespace(Whitespace::Space),
                Token::Eq,
                Token::Whitespace(Whitespace::Space),
                Token::make_word(ARRAY_SET, None),
                Token::LParen,
            ];
            if let Some(target) = &target {
                call.extend([target.clone(), Token::Period]);
            }
            call.extend([Token::Word(column), Token::Comma, Token::LParen]);
            call.extend(index);
            call.extend([Token::RParen, Token::Comma, Token::LParen]);
            call.extend(value);
            call.push(Token::RParen);
            if again {
                call.extend([Token::Comma, Token::make_keyword("TRUE")]);
            }
            call.push(Token::RParen);
            let added = call.len();
            tokens.splice(name..end, call.into_iter().map(TokenWithSpan::wrap));
            let end = name + added;
            if !more {
                i = end;
                break;
            }
            at = end + 1;
        }
        i = i.max(at) + 1;
    }
}

/// The name (or alias) of the table the UPDATE or `INSERT … ON CONFLICT … DO UPDATE` whose
/// SET is at `set` writes.
fn update_target(tokens: &[TokenWithSpan], set: usize) -> Option<Token> {
    use datafusion::sql::sqlparser::keywords::Keyword;
    let words: Vec<(usize, &Token)> = tokens[..set]
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_)))
        .map(|(j, t)| (j, &t.token))
        .collect();
    let is = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    // The statement's start: after the last semicolon.
    let start = words
        .iter()
        .rposition(|(_, t)| **t == Token::SemiColon)
        .map_or(0, |p| p + 1);
    let statement = &words[start..];
    let upsert = matches!(
        words.as_slice(),
        [.., (_, done), (_, update)] if is(done, Keyword::DO) && is(update, Keyword::UPDATE)
    );
    if !upsert {
        // UPDATE [ONLY] name [[AS] alias] SET
        let mut name = 1;
        if !statement
            .first()
            .is_some_and(|(_, t)| is(t, Keyword::UPDATE))
        {
            return None;
        }
        if statement
            .get(name)
            .is_some_and(|(_, t)| is(t, Keyword::ONLY))
        {
            name += 1;
        }
        while statement
            .get(name + 1)
            .is_some_and(|(_, t)| **t == Token::Period)
        {
            name += 2;
        }
        let rest = &statement[(name + 1).min(statement.len())..];
        let alias = match rest {
            [(_, a), (_, alias)] if is(a, Keyword::AS) => Some(alias),
            [(_, alias)] => Some(alias),
            _ => None,
        };
        return alias
            .or(statement.get(name).map(|(_, t)| t))
            .map(|t| (*t).clone());
    }
    let into = statement.iter().position(|(_, t)| is(t, Keyword::INTO))?;
    let mut name = into + 1;
    // A qualified name's last part.
    while statement
        .get(name + 1)
        .is_some_and(|(_, t)| **t == Token::Period)
    {
        name += 2;
    }
    let alias = statement
        .get(name + 1)
        .filter(|(_, t)| is(t, Keyword::AS))
        .and_then(|_| statement.get(name + 2));
    alias.or(statement.get(name)).map(|(_, t)| (*t).clone())
}

/// Where the value that starts at `from` ends (the index of the token after it), and whether
/// a comma follows (another assignment).
fn value_end(tokens: &[TokenWithSpan], from: usize) -> (usize, bool) {
    use datafusion::sql::sqlparser::keywords::Keyword;
    let mut depth = 0i32;
    let mut previous: Option<&Token> = None;
    for (j, t) in tokens.iter().enumerate().skip(from) {
        // `IS [NOT] DISTINCT FROM`'s FROM belongs to the value.
        let distinct = matches!(previous, Some(Token::Word(w)) if w.keyword == Keyword::DISTINCT);
        if !matches!(t.token, Token::Whitespace(_)) {
            previous = Some(&t.token);
        }
        match &t.token {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth -= 1,
            Token::Comma if depth == 0 => return (j, true),
            Token::SemiColon if depth == 0 => return (j, false),
            Token::Word(w)
                if depth == 0
                    && w.quote_style.is_none()
                    && matches!(
                        w.keyword,
                        Keyword::WHERE | Keyword::RETURNING | Keyword::FROM
                    )
                    && !(distinct && w.keyword == Keyword::FROM) =>
            {
                return (j, false);
            }
            _ => {}
        }
        if depth < 0 {
            return (j, false);
        }
    }
    (tokens.len(), false)
}

/// `partita_array_set(array, i, value)`: the array with element `i` (from 1) set to
/// `value`, NULLs filling the places between its end and `i`, as PostgreSQL's assignment to
/// an element does. A NULL array is taken as empty.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ArraySet {
    signature: Signature,
}

impl Default for ArraySet {
    fn default() -> Self {
        ArraySet {
            signature: Signature::one_of(
                vec![
                    datafusion::logical_expr::TypeSignature::Any(3),
                    datafusion::logical_expr::TypeSignature::Any(4),
                ],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for ArraySet {
    fn name(&self) -> &str {
        ARRAY_SET
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match &arg_types[0] {
            DataType::List(_) => Ok(arg_types[0].clone()),
            other => {
                let oid = crate::pg_catalog::field_type_oid(&Field::new("", other.clone(), true));
                Err(DataFusionError::External(Box::new(
                    Error::DatatypeMismatch(format!(
                        "cannot subscript type {} because it does not support subscripting",
                        crate::pg_catalog::format_type(i64::from(oid), None)
                    )),
                )))
            }
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::common::ScalarValue;
        if args.args.len() == 4 {
            return Err(DataFusionError::External(Box::new(Error::Unsupported(
                "assigning to two elements of one array in one SET list".into(),
            ))));
        }
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { rows };
        let lists = args.args[0].to_array(n)?;
        let DataType::List(item) = lists.data_type().clone() else {
            return datafusion::common::exec_err!("{ARRAY_SET} takes an array");
        };
        let element = item.data_type().clone();
        let indexes =
            datafusion::arrow::compute::cast(&args.args[1].to_array(n)?, &DataType::Int64)?;
        let indexes = indexes.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        let values = args.args[2].to_array(n)?;
        let values = match values.data_type() == &element {
            true => values,
            false => cast_with_options(
                &values,
                &element,
                &CastOptions {
                    safe: false,
                    ..Default::default()
                },
            )?,
        };
        let lists = lists.as_list::<i32>();
        let mut out = Vec::with_capacity(n);
        for r in 0..n {
            let mut elements: Vec<ScalarValue> = match lists.is_null(r) {
                true => Vec::new(),
                false => {
                    let one = lists.value(r);
                    (0..one.len())
                        .map(|i| ScalarValue::try_from_array(&one, i))
                        .collect::<Result<_>>()?
                }
            };
            if indexes.is_null(r) {
                return Err(DataFusionError::External(Box::new(
                    Error::NullValueNotAllowed(
                        "array subscript in assignment must not be null".into(),
                    ),
                )));
            }
            let i = indexes.value(r);
            if i < 1 {
                return Err(DataFusionError::External(Box::new(Error::Unsupported(
                    "array subscripts below 1".into(),
                ))));
            }
            let i = usize::try_from(i - 1).unwrap_or(usize::MAX);
            // PostgreSQL gives an empty array the subscript's lower bound (`[3:3]={x}`),
            // which Partita's arrays, all from 1, cannot show.
            if elements.is_empty() && i > 0 {
                return Err(DataFusionError::External(Box::new(Error::Unsupported(
                    "assigning past the first element of an empty or NULL array".into(),
                ))));
            }
            if i >= elements.len() {
                if i > elements.len() + 100_000 {
                    return Err(DataFusionError::External(Box::new(Error::ProgramLimit(
                        "array size exceeds the maximum allowed".into(),
                    ))));
                }
                elements.resize(i + 1, ScalarValue::try_from(&element)?);
            }
            elements[i] = ScalarValue::try_from_array(&values, r)?;
            out.push(ScalarValue::List(ScalarValue::new_list_nullable(
                &elements, &element,
            )));
        }
        let array = ScalarValue::iter_to_array(out)?;
        Ok(match scalar {
            true => ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?),
            false => ColumnarValue::Array(array),
        })
    }
}

/// The name of [`OrEmpty`].
pub const OR_EMPTY: &str = "partita_array_or_empty";

/// `partita_array_or_empty(list)`: the list, or the empty list of its type when it is NULL.
/// `ARRAY(SELECT …)` is an `array_agg` of the rows, NULL when there are none, where
/// PostgreSQL's is `{}`. (`coalesce(…, make_array())` would type the result without the
/// element's field metadata, which the values keep.)
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct OrEmpty {
    signature: Signature,
}

impl Default for OrEmpty {
    fn default() -> Self {
        OrEmpty {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for OrEmpty {
    fn name(&self) -> &str {
        OR_EMPTY
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(plain_list(&args[0]))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let ty = plain_list(args.arg_fields[0].data_type());
        Ok(Arc::new(Field::new(self.name(), ty, false)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::{ListArray, new_empty_array};
        use datafusion::arrow::buffer::OffsetBuffer;
        let rows = args.number_rows;
        let list = args.args[0].to_array(rows)?;
        let DataType::List(item) = plain_list(list.data_type()) else {
            return Ok(args.args[0].clone());
        };
        // A NULL list has no elements, so dropping the null mask leaves it empty. The
        // element's field loses its metadata, as the declared type does (DataFusion's plans
        // do not agree on it).
        let list = list.as_list::<i32>();
        let values = match list.values().len() {
            0 => new_empty_array(item.data_type()),
            _ => Arc::clone(list.values()),
        };
        let offsets = OffsetBuffer::new(list.offsets().inner().clone());
        let filled = ListArray::try_new(item, offsets, values, None)?;
        Ok(match &args.args[0] {
            ColumnarValue::Scalar(_) => {
                ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&filled, 0)?)
            }
            ColumnarValue::Array(_) => ColumnarValue::Array(Arc::new(filled)),
        })
    }
}

/// A list type whose element field has no metadata (other types as they are).
fn plain_list(ty: &DataType) -> DataType {
    match ty {
        DataType::List(item) => DataType::new_list(item.data_type().clone(), true),
        other => other.clone(),
    }
}
