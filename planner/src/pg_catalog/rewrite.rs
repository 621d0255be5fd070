//! Normalizes the PostgreSQL spellings catalog queries use into what DataFusion plans:
//!
//! - `pg_catalog.f(…)` and `FROM pg_catalog.unnest(…)` lose the qualifier;
//! - `a OPERATOR(pg_catalog.~) b` becomes `a ~ b`; `x COLLATE "C"` becomes `x`;
//! - casts to the OID-alias types call catalog functions: `'t'::regclass` gives the
//!   relation's OID and `oid::regclass` its name (likewise regtype and regnamespace); casts
//!   to `oid`, `name`, `pg_catalog.text` … become casts to the types Partita has;
//! - `ARRAY(SELECT x FROM … ORDER BY …)` becomes `(SELECT array_agg(x ORDER BY …) FROM …)`;
//! - in statements reading the catalog, an array literal written as text (`'{0}'`) compared
//!   with a value becomes an array.

use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, DataType, Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause,
    FunctionArgumentList, FunctionArguments, Ident, ObjectName, ObjectNamePart, OrderByKind,
    SetExpr, Statement, TableFactor, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use std::ops::ControlFlow;

/// Applies the rewrites above to `stmt`.
pub fn normalize(stmt: &mut Statement) {
    let catalog_query = reads_catalog(stmt);
    if catalog_query {
        let _ = stmt.visit(&mut EmptyPruner);
    }
    let _ = stmt.visit(&mut Normalizer { catalog_query });
}

/// Catalogs of features Partita does not have: they never have rows.
const EMPTY_CATALOGS: &[&str] = &[
    "pg_auth_members",
    "pg_inherits",
    "pg_policies",
    "pg_policy",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_range",
    "pg_rewrite",
    "pg_shdescription",
    "pg_statistic_ext",
    "pg_trigger",
];

/// Catalog columns that are always NULL in Partita (options and access lists).
const NULL_COLUMNS: &[&str] = &[
    "reloptions",
    "relacl",
    "attoptions",
    "attacl",
    "datacl",
    "nspacl",
    "spcacl",
    "spcoptions",
    "rolconfig",
];

/// Whether a FROM item has no rows: an empty catalog, or `unnest` of an always-NULL column.
fn empty_factor(factor: &TableFactor) -> bool {
    let TableFactor::Table { name, args, .. } = factor else {
        return false;
    };
    let parts = idents(name);
    let last = parts.last().map(String::as_str).unwrap_or("");
    match args {
        None => EMPTY_CATALOGS.contains(&last),
        Some(args) => {
            last == "unnest"
                && args.args.len() == 1
                && matches!(
                    &args.args[0],
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::CompoundIdentifier(c)))
                        if c.last().is_some_and(|i| NULL_COLUMNS.contains(&i.value.to_lowercase().as_str()))
                )
        }
    }
}

/// Whether the SELECT has no rows because an inner-joined FROM item has none.
fn empty_select(select: &ast::Select) -> bool {
    select.from.iter().any(|t| {
        empty_factor(&t.relation)
            || t.joins.iter().any(|j| {
                matches!(
                    j.join_operator,
                    ast::JoinOperator::Join(_)
                        | ast::JoinOperator::Inner(_)
                        | ast::JoinOperator::CrossJoin(_)
                ) && empty_factor(&j.relation)
            })
    })
}

/// Whether the SELECT aggregates (an aggregate over no rows still gives a row).
fn aggregates(select: &ast::Select) -> bool {
    struct Finder(bool);
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e
                && let Some(name) = idents(&f.name).last()
                && matches!(
                    name.as_str(),
                    "count"
                        | "sum"
                        | "avg"
                        | "min"
                        | "max"
                        | "array_agg"
                        | "string_agg"
                        | "bool_and"
                        | "bool_or"
                        | "every"
                        | "json_agg"
                        | "jsonb_agg"
                        | "json_object_agg"
                        | "jsonb_object_agg"
                )
            {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut f =
        Finder(!matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty()));
    for item in &select.projection {
        let _ = item.visit(&mut f);
    }
    f.0
}

fn contains_subquery(e: &Expr) -> bool {
    struct Finder(bool);
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _q: &ast::Query) -> ControlFlow<()> {
            self.0 = true;
            ControlFlow::Break(())
        }
    }
    let mut f = Finder(false);
    let _ = e.visit(&mut f);
    f.0
}

/// In catalog queries, a SELECT over a catalog Partita keeps empty has no rows, so its
/// select-list subqueries (which may use what DataFusion cannot plan, such as set-returning
/// functions of outer columns) are never evaluated: they become NULL. `ARRAY(SELECT …)` over
/// such a FROM is the empty array.
struct EmptyPruner;

impl VisitorMut for EmptyPruner {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
        fn prune(body: &mut SetExpr) {
            match body {
                SetExpr::Select(select) if empty_select(select) => {
                    for item in &mut select.projection {
                        match item {
                            ast::SelectItem::UnnamedExpr(e)
                            | ast::SelectItem::ExprWithAlias { expr: e, .. }
                                if contains_subquery(e) =>
                            {
                                *e = Expr::value(Value::Null);
                            }
                            _ => {}
                        }
                    }
                }
                SetExpr::SetOperation { left, right, .. } => {
                    prune(left);
                    prune(right);
                }
                _ => {}
            }
        }
        prune(q.body.as_mut());
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        // A scalar subquery over an empty catalog is NULL (unless it aggregates).
        if let Expr::Subquery(q) = e
            && let SetExpr::Select(s) = q.body.as_ref()
            && empty_select(s)
            && !aggregates(s)
        {
            *e = Expr::value(Value::Null);
            return ControlFlow::Continue(());
        }
        if let Expr::Function(f) = e
            && idents(&f.name) == ["array"]
            && let FunctionArguments::Subquery(q) = &f.args
            && matches!(q.body.as_ref(), SetExpr::Select(s) if empty_select(s))
        {
            *e = call("make_array", vec![]);
        }
        ControlFlow::Continue(())
    }
}

fn reads_catalog(stmt: &Statement) -> bool {
    struct Finder(bool);
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_relation(&mut self, name: &ObjectName) -> ControlFlow<()> {
            let parts = idents(name);
            if parts.len() == 2 && (parts[0] == "pg_catalog" || parts[0] == "information_schema")
                || parts.last().is_some_and(|n| n.starts_with("pg_"))
            {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut finder = Finder(false);
    let _ = stmt.visit(&mut finder);
    finder.0
}

/// The name's parts, lower-cased.
fn idents(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.to_lowercase(),
            other => other.to_string().to_lowercase(),
        })
        .collect()
}

/// `pg_catalog.x` → `x`.
fn strip_pg_catalog(name: &mut ObjectName) -> bool {
    if name.0.len() == 2 && idents(name)[0] == "pg_catalog" {
        name.0.remove(0);
        return true;
    }
    false
}

/// `name(args…)`.
pub(crate) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(ast::Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
                .collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

fn is_string_literal(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_) | Value::EscapedStringLiteral(_))
    )
}

/// The types catalog queries cast to, as Partita has them; `None` for the OID aliases.
fn plain_type(ty: &DataType) -> Option<DataType> {
    if matches!(ty, DataType::Regclass) {
        return None;
    }
    let DataType::Custom(name, modifiers) = ty else {
        if let DataType::Array(ast::ArrayElemTypeDef::SquareBracket(inner, size)) = ty {
            let inner = plain_type(inner)?;
            return Some(DataType::Array(ast::ArrayElemTypeDef::SquareBracket(
                Box::new(inner),
                *size,
            )));
        }
        return Some(ty.clone());
    };
    let parts = idents(name);
    let last = parts.last().map(String::as_str).unwrap_or("");
    Some(match last {
        // `oid` stays itself: `PostgresTypes` plans it as an annotated int4, so that a
        // `$1::oid[]` parameter is described as `oid[]` (asyncpg's type lookup sends one).
        "oid" => DataType::Custom(ObjectName::from(vec![Ident::new("oid")]), vec![]),
        "regproc" | "regprocedure" | "regoper" | "regrole" | "xid" | "cid" => {
            DataType::Integer(None)
        }
        "text" | "name" | "char" | "bpchar" => DataType::Text,
        "int2" => DataType::SmallInt(None),
        "int4" => DataType::Integer(None),
        "int8" => DataType::BigInt(None),
        "float4" => DataType::Real,
        "float8" => DataType::DoublePrecision,
        "bool" => DataType::Boolean,
        "regclass" | "regtype" | "regnamespace" => return None,
        _ if parts.len() == 2 && parts[0] == "pg_catalog" => {
            DataType::Custom(ObjectName::from(vec![Ident::new(last)]), modifiers.clone())
        }
        _ => ty.clone(),
    })
}

/// The OID-alias cast of `expr` to `ty` (regclass, regtype, regnamespace) as a call.
fn alias_cast(expr: Expr, ty: &DataType) -> Option<Expr> {
    // `'{int4,int8}'::regtype[]`: the array of each name's OID; another array's OIDs as
    // they are.
    if let DataType::Array(ast::ArrayElemTypeDef::SquareBracket(element, _)) = ty {
        let Expr::Value(v) = &expr else {
            return Some(Expr::Cast {
                kind: ast::CastKind::DoubleColon,
                expr: Box::new(expr),
                data_type: DataType::Array(ast::ArrayElemTypeDef::SquareBracket(
                    Box::new(DataType::Integer(None)),
                    None,
                )),
                array: false,
                format: None,
            });
        };
        let (Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text)) = &v.value else {
            return None;
        };
        let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
        let names = inner
            .split(',')
            .map(|n| n.trim().trim_matches('"'))
            .filter(|n| !n.is_empty());
        let oids = names
            .map(|n| alias_cast(Expr::value(Value::SingleQuotedString(n.into())), element))
            .collect::<Option<Vec<_>>>()?;
        return Some(call("make_array", oids));
    }
    let alias = match ty {
        DataType::Regclass => "regclass".to_string(),
        DataType::Custom(name, _) => idents(name).last()?.clone(),
        _ => return None,
    };
    let literal = is_string_literal(&expr);
    let function = match (alias.as_str(), literal) {
        ("regclass", true) => "partita_regclass",
        ("regclass", false) => "partita_relname",
        ("regtype", true) => "partita_regtype",
        ("regtype", false) => "partita_typname",
        ("regnamespace", _) => "partita_nspname",
        _ => return None,
    };
    Some(call(function, vec![expr]))
}

/// `ARRAY(SELECT x FROM … ORDER BY k)` → `(SELECT array_agg(x ORDER BY k) FROM …)`.
fn array_subquery(query: &ast::Query) -> Option<Expr> {
    let mut query = query.clone();
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    if select.projection.len() != 1
        || !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
    {
        return None;
    }
    let item = match &select.projection[0] {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            e.clone()
        }
        _ => return None,
    };
    let mut clauses = vec![];
    if let Some(order_by) = query.order_by.take() {
        let OrderByKind::Expressions(mut exprs) = order_by.kind else {
            return None;
        };
        for o in &mut exprs {
            // ORDER BY 1 names the projected value.
            if let Expr::Value(v) = &o.expr
                && matches!(v.value, Value::Number(..))
            {
                o.expr = item.clone();
            }
        }
        clauses.push(FunctionArgumentClause::OrderBy(exprs));
    }
    let Expr::Function(mut aggregate) = call("array_agg", vec![item]) else {
        return None;
    };
    if let FunctionArguments::List(list) = &mut aggregate.args {
        list.clauses = clauses;
    }
    // Named as PostgreSQL names an ARRAY(…) item; no rows make the empty array.
    select.projection = vec![ast::SelectItem::ExprWithAlias {
        expr: call(crate::arrays::OR_EMPTY, vec![Expr::Function(aggregate)]),
        alias: ast::Ident::with_quote('"', "array"),
    }];
    Some(Expr::Subquery(Box::new(query)))
}

/// `'{1,2}'` → `make_array(1, 2)`; `'{a,b}'` → `make_array('a', 'b')`.
fn text_array(e: &Expr) -> Option<Expr> {
    let Expr::Value(v) = e else {
        return None;
    };
    let Value::SingleQuotedString(s) = &v.value else {
        return None;
    };
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    let elements: Vec<&str> = if inner.is_empty() {
        vec![]
    } else {
        inner.split(',').map(str::trim).collect()
    };
    let numeric = elements.iter().all(|x| x.parse::<i64>().is_ok());
    Some(call(
        "make_array",
        elements
            .into_iter()
            .map(|x| {
                if numeric {
                    Expr::value(Value::Number(x.to_string(), false))
                } else {
                    Expr::value(Value::SingleQuotedString(x.trim_matches('"').to_string()))
                }
            })
            .collect(),
    ))
}

struct Normalizer {
    catalog_query: bool,
}

/// The catalog columns of PostgreSQL's vector types (int2vector, oidvector), whose
/// subscripts start at 0 where an array's start at 1.
const VECTOR_COLUMNS: &[&str] = &[
    "indkey",
    "indclass",
    "indcollation",
    "indoption",
    "proargtypes",
    // pgjdbc's getIndexInfo names indoption so in a derived table.
    "i_indoption",
];

/// What a vector's subscript is moved by: `1::smallint`, which no query writes there, so
/// that a statement normalized and printed (a view's, a rewritten subquery's) and parsed
/// again is not moved twice.
fn shift() -> Expr {
    Expr::Cast {
        kind: ast::CastKind::DoubleColon,
        expr: Box::new(Expr::value(Value::Number("1".into(), false))),
        data_type: ast::DataType::SmallInt(None),
        array: false,
        format: None,
    }
}

/// Whether a vector's subscript was moved already (`(i + 1::smallint)`).
fn shifted(index: &Expr) -> bool {
    matches!(index, Expr::Nested(inner)
        if matches!(inner.as_ref(), Expr::BinaryOp { op: BinaryOperator::Plus, right, .. }
            if right.as_ref() == &shift()))
}

/// The subscript of a vector column's element (`indkey[0]`, `i.indkey[0]`).
fn vector_subscript<'a>(root: &Expr, chain: &'a [ast::AccessExpr]) -> Option<&'a Expr> {
    let (ast::AccessExpr::Subscript(ast::Subscript::Index { index }), before) =
        chain.split_last()?
    else {
        return None;
    };
    let vector = match before {
        [] => is_vector(root),
        [ast::AccessExpr::Dot(column)] => matches!(root, Expr::Identifier(_)) && is_vector(column),
        _ => false,
    };
    vector.then_some(index)
}

/// Whether `e` names one of the catalogs' vector columns (`i.indkey`).
fn is_vector(e: &Expr) -> bool {
    let name = match e {
        Expr::Nested(inner) => return is_vector(inner),
        Expr::Identifier(id) => id,
        Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(last) => last,
            None => return false,
        },
        _ => return false,
    };
    VECTOR_COLUMNS.contains(&name.value.to_ascii_lowercase().as_str())
}

/// `EXISTS (SELECT … FROM … WHERE …)` in a select list (DataFusion plans EXISTS only in
/// conditions) as `(SELECT count(*) > 0 FROM … WHERE …)`; any other query (no FROM, GROUP
/// BY, LIMIT, a set operation) as `(SELECT count(*) > 0 FROM (query) AS e)`.
fn exists_as_count(q: &ast::Query, negated: bool) -> Option<Expr> {
    let mut q = q.clone();
    let simple = match q.body.as_ref() {
        SetExpr::Select(select) => {
            matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
                && select.having.is_none()
                && q.limit_clause.is_none()
                && q.fetch.is_none()
                && !select.from.is_empty()
                // An aggregate gives a row even over no rows.
                && !aggregates(select)
        }
        _ => false,
    };
    if !simple {
        let derived = ast::TableWithJoins {
            relation: TableFactor::Derived {
                lateral: false,
                subquery: Box::new(q.clone()),
                alias: Some(ast::TableAlias {
                    explicit: true,
                    name: Ident::new("__partita_exists"),
                    columns: vec![],
                    at: None,
                }),
                sample: None,
            },
            joins: vec![],
        };
        let mut outer = crate::dml::select_query(vec![], vec![derived], None);
        outer.with = None;
        q = outer;
    }
    let SetExpr::Select(select) = q.body.as_mut() else {
        return None;
    };
    let count = call("count", vec![Expr::value(Value::Number("1".into(), false))]);
    let test = Expr::BinaryOp {
        left: Box::new(count),
        op: if negated {
            BinaryOperator::Eq
        } else {
            BinaryOperator::Gt
        },
        right: Box::new(Expr::value(Value::Number("0".into(), false))),
    };
    select.projection = vec![ast::SelectItem::UnnamedExpr(test)];
    q.order_by = None;
    Some(Expr::Subquery(Box::new(q)))
}

impl VisitorMut for Normalizer {
    type Break = ();

    fn post_visit_select(&mut self, select: &mut ast::Select) -> ControlFlow<()> {
        /// Rewrites the EXISTS of the select list itself, not those of subqueries in it
        /// (their selects are visited on their own, where DataFusion may decorrelate them).
        struct Exists {
            depth: usize,
        }
        impl VisitorMut for Exists {
            type Break = ();
            fn pre_visit_query(&mut self, _q: &mut ast::Query) -> ControlFlow<()> {
                self.depth += 1;
                ControlFlow::Continue(())
            }
            fn post_visit_query(&mut self, _q: &mut ast::Query) -> ControlFlow<()> {
                self.depth -= 1;
                ControlFlow::Continue(())
            }
            fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
                if self.depth == 0
                    && let Expr::Exists { subquery, negated } = e
                    && let Some(count) = exists_as_count(subquery, *negated)
                {
                    *e = count;
                }
                ControlFlow::Continue(())
            }
        }
        for item in &mut select.projection {
            // The column keeps the name PostgreSQL gives it.
            // (`NOT EXISTS` is an operator's: `?column?`.)
            if let ast::SelectItem::UnnamedExpr(e @ Expr::Exists { negated: false, .. }) = item {
                *item = ast::SelectItem::ExprWithAlias {
                    expr: e.clone(),
                    alias: Ident::new("exists"),
                };
            }
            let _ = item.visit(&mut Exists { depth: 0 });
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args, .. } = factor {
            if args.is_some() {
                strip_pg_catalog(name);
            } else if name.0.len() == 1
                && super::tables::PG_CATALOG_TABLES.contains(&idents(name)[0].as_str())
            {
                // pg_catalog is searched first, as in PostgreSQL.
                name.0
                    .insert(0, ObjectNamePart::Identifier(Ident::new("pg_catalog")));
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        match e {
            Expr::Function(f) => {
                strip_pg_catalog(&mut f.name);
                // information_schema._pg_expandarray(a): the elements with their
                // positions, as (…).x and (…).n; the call itself stands for the elements.
                if idents(&f.name)
                    .last()
                    .is_some_and(|n| n == "_pg_expandarray")
                    && let FunctionArguments::List(list) = &f.args
                    && let [FunctionArg::Unnamed(FunctionArgExpr::Expr(array))] =
                        list.args.as_slice()
                {
                    *e = call("unnest", vec![array.clone()]);
                    return ControlFlow::Continue(());
                }
                // generate_subscripts(a, 1) → unnest(generate_series(1, array_length(a, 1))),
                // zipped with the other set-returning functions of the select list.
                if idents(&f.name) == ["generate_subscripts"]
                    && let FunctionArguments::List(list) = &f.args
                    && list.args.len() == 2
                    && let (
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(array)),
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(dim)),
                    ) = (&list.args[0], &list.args[1])
                {
                    let length = call("array_length", vec![array.clone(), dim.clone()]);
                    let one = Expr::value(Value::Number("1".into(), false));
                    // A vector's subscripts start at 0 (SQLAlchemy reads an index's
                    // expressions by them).
                    let (first, last) = match self.catalog_query && is_vector(array) {
                        true => (
                            Expr::value(Value::Number("0".into(), false)),
                            Expr::BinaryOp {
                                left: Box::new(length),
                                op: BinaryOperator::Minus,
                                right: Box::new(one),
                            },
                        ),
                        false => (one, length),
                    };
                    *e = call("unnest", vec![call("generate_series", vec![first, last])]);
                    return ControlFlow::Continue(());
                }
                // array_lower/array_upper of a vector: its subscripts run from 0.
                if self.catalog_query
                    && let [name] = idents(&f.name).as_slice()
                    && (name == "array_lower" || name == "array_upper")
                    && let FunctionArguments::List(list) = &f.args
                    && let [
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(array)),
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(dim)),
                    ] = list.args.as_slice()
                    && is_vector(array)
                {
                    // NULL for an empty one, as for an array.
                    let length = call("array_length", vec![array.clone(), dim.clone()]);
                    let (op, by) = match name.as_str() {
                        "array_lower" => (BinaryOperator::Multiply, "0"),
                        _ => (BinaryOperator::Minus, "1"),
                    };
                    *e = Expr::Nested(Box::new(Expr::BinaryOp {
                        left: Box::new(length),
                        op,
                        right: Box::new(Expr::value(Value::Number(by.into(), false))),
                    }));
                    return ControlFlow::Continue(());
                }
                // nextval('s'::regclass): the sequence functions read a name as regclass
                // does, so the constant stays a name rather than an OID to look up again.
                if idents(&f.name)
                    .last()
                    .is_some_and(|n| ["nextval", "currval", "setval"].contains(&n.as_str()))
                    && let FunctionArguments::List(list) = &mut f.args
                    && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) =
                        list.args.first_mut()
                    && let Expr::Function(cast) = first
                    && idents(&cast.name) == ["partita_regclass"]
                    && let FunctionArguments::List(inner) = &cast.args
                    && let [FunctionArg::Unnamed(FunctionArgExpr::Expr(name))] =
                        inner.args.as_slice()
                {
                    *first = name.clone();
                    return ControlFlow::Continue(());
                }
                if let FunctionArguments::Subquery(q) = &f.args
                    && idents(&f.name) == ["array"]
                    && let Some(rewritten) = array_subquery(q)
                {
                    *e = rewritten;
                }
            }
            Expr::BinaryOp { op, left, right } => {
                if let BinaryOperator::PGCustomBinaryOperator(parts) = op
                    && let Some(mapped) = parts.last().and_then(|o| operator(o))
                {
                    *op = mapped;
                }
                if self.catalog_query && matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq) {
                    if let Some(array) = text_array(right) {
                        **right = array;
                    } else if let Some(array) = text_array(left) {
                        **left = array;
                    }
                }
                // A regclass in a concatenation is shown by its name.
                if matches!(op, BinaryOperator::StringConcat) {
                    for side in [left, right] {
                        if let Expr::Function(f) = side.as_ref()
                            && matches!(idents(&f.name).as_slice(),
                                [n] if n == "partita_relname" || n == "partita_regclass")
                        {
                            **side = call("partita_regclass_name", function_args(f));
                        }
                    }
                }
            }
            // `indkey[0]`, `i.indkey[0]`: a vector's first element (arrays here start at 1).
            Expr::CompoundFieldAccess { root, access_chain }
                if self.catalog_query && vector_subscript(root, access_chain).is_some() =>
            {
                if let Some(ast::AccessExpr::Subscript(ast::Subscript::Index { index })) =
                    access_chain.last_mut()
                    && !shifted(index)
                {
                    *index = Expr::Nested(Box::new(Expr::BinaryOp {
                        left: Box::new(index.clone()),
                        op: BinaryOperator::Plus,
                        right: Box::new(shift()),
                    }));
                }
            }
            Expr::CompoundFieldAccess { root, access_chain }
                if self.catalog_query && access_chain.len() == 1 =>
            {
                let ast::AccessExpr::Dot(Expr::Identifier(key)) = &access_chain[0] else {
                    return ControlFlow::Continue(());
                };
                let mut inner = root.as_ref();
                while let Expr::Nested(x) = inner {
                    inner = x;
                }
                let unnested = match inner {
                    Expr::Function(f) if idents(&f.name) == ["unnest"] => match &f.args {
                        FunctionArguments::List(list) => match list.args.as_slice() {
                            [FunctionArg::Unnamed(FunctionArgExpr::Expr(array))] => {
                                Some(array.clone())
                            }
                            _ => None,
                        },
                        _ => None,
                    },
                    _ => None,
                };
                match (unnested, key.value.to_lowercase().as_str()) {
                    (Some(array), "n") => {
                        let length = call(
                            "array_length",
                            vec![array, Expr::value(Value::Number("1".into(), false))],
                        );
                        let one = Expr::value(Value::Number("1".into(), false));
                        *e = call("unnest", vec![call("generate_series", vec![one, length])]);
                    }
                    (Some(array), "x") => *e = call("unnest", vec![array]),
                    // (keys).x of a column that already holds the elements.
                    (None, "x") => *e = inner.clone(),
                    _ => {}
                }
            }
            Expr::Collate { expr, .. } => {
                let inner = std::mem::replace(expr.as_mut(), Expr::value(Value::Null));
                *e = inner;
            }
            // `'array_in(cstring,oid,integer)'::regprocedure` (Rails' type-map query): the
            // function's name, which the catalogs' typinput and typoutput columns hold.
            Expr::Cast {
                expr, data_type, ..
            } if function_type(data_type) && is_string_literal(expr) => {
                if let Expr::Value(v) = expr.as_ref()
                    && let Value::SingleQuotedString(text) = &v.value
                {
                    let name = text.split('(').next().unwrap_or(text).trim();
                    let name = name.strip_prefix("pg_catalog.").unwrap_or(name);
                    *e = Expr::value(Value::SingleQuotedString(name.to_string()));
                }
            }
            // `'int4'::regtype::text`, `'users'::regclass::text`, `'public'::regnamespace::text`:
            // the OID the literal names, shown by name.
            Expr::Cast {
                expr, data_type, ..
            } if matches!(
                plain_type(data_type),
                Some(DataType::Text | DataType::Varchar(_) | DataType::CharacterVarying(_))
            ) && matches!(expr.as_ref(), Expr::Function(f)
                    if matches!(idents(&f.name).as_slice(),
                        [n] if n == "partita_regtype" || n == "partita_regclass" || n == "partita_relname"
                            || (n == "partita_nspname"
                                && function_args(f).first().is_some_and(is_string_literal)))) =>
            {
                let Expr::Function(f) = expr.as_ref() else {
                    return ControlFlow::Continue(());
                };
                let shown = match idents(&f.name).as_slice() {
                    [n] if n == "partita_regtype" => "partita_typname",
                    // Of a name, the schema's OID; of that OID, its name.
                    [n] if n == "partita_nspname" => "partita_nspname",
                    [n] if n == "partita_relname" => {
                        // `x::regclass::text` of a name or an OID: the name.
                        *e = call("partita_regclass_name", function_args(f));
                        return ControlFlow::Continue(());
                    }
                    _ => "partita_relname",
                };
                **expr = call(shown, vec![expr.as_ref().clone()]);
                *data_type = DataType::Text;
            }

            Expr::Cast {
                expr, data_type, ..
            } => match plain_type(data_type) {
                Some(ty) => *data_type = ty,
                None => {
                    let inner = std::mem::replace(expr.as_mut(), Expr::value(Value::Null));
                    let ty = data_type.clone();
                    match alias_cast(inner.clone(), &ty) {
                        Some(c) => *e = c,
                        None => **expr = inner,
                    }
                }
            },
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// The plain arguments of a call.
fn function_args(f: &ast::Function) -> Vec<Expr> {
    match &f.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `ty` is `regproc` or `regprocedure`.
fn function_type(ty: &DataType) -> bool {
    matches!(ty, DataType::Custom(name, _)
        if matches!(idents(name).last().map(String::as_str), Some("regproc" | "regprocedure")))
}

/// The operator `OPERATOR(pg_catalog.op)` names.
fn operator(op: &str) -> Option<BinaryOperator> {
    Some(match op {
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "~~" => BinaryOperator::PGLikeMatch,
        "!~~" => BinaryOperator::PGNotLikeMatch,
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        "<=" => BinaryOperator::LtEq,
        ">" => BinaryOperator::Gt,
        ">=" => BinaryOperator::GtEq,
        "||" => BinaryOperator::StringConcat,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut stmt = crate::session::parse_sql(sql).unwrap().remove(0);
        normalize(&mut stmt);
        stmt.to_string()
    }

    #[test]
    fn psql_spellings_become_plain_sql() {
        assert_eq!(
            rewritten(
                "SELECT pg_catalog.format_type(a, b) FROM pg_catalog.pg_class c \
                 WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default"
            ),
            "SELECT format_type(a, b) FROM pg_catalog.pg_class c WHERE c.relname ~ '^(t)$'"
        );
        assert_eq!(
            rewritten("SELECT c.oid::pg_catalog.regclass, 't'::regclass, x::pg_catalog.text"),
            "SELECT partita_relname(c.oid), partita_regclass('t'), x::TEXT"
        );
        assert_eq!(
            rewritten("SELECT ARRAY(SELECT rolname FROM pg_roles ORDER BY 1)"),
            "SELECT (SELECT partita_array_or_empty(array_agg(rolname ORDER BY rolname)) AS \"array\" FROM pg_catalog.pg_roles)"
        );
        assert_eq!(
            rewritten("SELECT 1 FROM pg_policy p WHERE p.polroles = '{0}'"),
            "SELECT 1 FROM pg_catalog.pg_policy p WHERE p.polroles = make_array(0)"
        );
        // Not a catalog query: text stays text.
        assert_eq!(
            rewritten("SELECT 1 FROM t WHERE t.a = '{0}'"),
            "SELECT 1 FROM t WHERE t.a = '{0}'"
        );
    }
}
