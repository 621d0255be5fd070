//! CREATE TABLE and ALTER TABLE: from sqlparser's AST to a `TableDef`.
//!
//! Key forms (PRODUCT.md): `PRIMARY KEY ((a, b), c DESC)` — partition key (a, b), row key c;
//! `PRIMARY KEY (a, b)` — the first column is the partition key; a column-level `PRIMARY
//! KEY`; `((a) HASH, b)` — hash-spread partition key; `WITH (partition_key = 'a,b')` — the
//! partition key named separately, the rest of the primary key is the row key; no primary key
//! at all — a hidden, hash-spread row id.

use crate::catalog::{CheckDef, ColumnDef, ROW_ID_COLUMN, ReferentialAction, RowKeyPart, TableDef};
use crate::error::{Error, Result};
use crate::types::SqlType;
use datafusion::sql::sqlparser::ast::{
    self, ColumnOption, CreateTableOptions, Expr, Ident, IndexColumn, ObjectName, SqlOption,
    TableConstraint, Value as AstValue,
};
use storage::layout::DEFAULT_HASH_BUCKETS;

/// An identifier as PostgreSQL folds it: unquoted names are lower-cased.
pub fn normalize_ident(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The unqualified table name; `public.t` and `t` are the same table.
pub fn table_name(name: &ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(normalize_ident)
                .ok_or_else(|| Error::Unsupported(format!("table name {name}")))
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [table] => Ok(table.clone()),
        [schema, table] if schema == "public" => Ok(table.clone()),
        [db, schema, table] if schema == "public" && !db.is_empty() => Ok(table.clone()),
        _ => Err(Error::UnknownTable(name.to_string())),
    }
}

/// One key element as written in PRIMARY KEY (…).
struct KeyElement {
    columns: Vec<String>,
    /// `(a, b)` in the first position: an explicit partition key.
    grouped: bool,
    hash: bool,
    desc: bool,
}

fn key_element(col: &IndexColumn) -> Result<KeyElement> {
    let hash = match &col.operator_class {
        None => false,
        Some(name) if name.to_string().eq_ignore_ascii_case("hash") => true,
        Some(name) => {
            return Err(Error::InvalidDefinition(format!(
                "unknown key option \"{name}\"; did you mean HASH?"
            )));
        }
    };
    let desc = col.column.options.asc == Some(false);
    let (columns, grouped) = match &col.column.expr {
        Expr::Identifier(id) => (vec![normalize_ident(id)], false),
        Expr::Nested(inner) => match inner.as_ref() {
            Expr::Identifier(id) => (vec![normalize_ident(id)], true),
            other => {
                return Err(Error::InvalidDefinition(format!(
                    "primary key element {other} is not a column"
                )));
            }
        },
        Expr::Tuple(items) => (
            items
                .iter()
                .map(|e| match e {
                    Expr::Identifier(id) => Ok(normalize_ident(id)),
                    other => Err(Error::InvalidDefinition(format!(
                        "primary key element {other} is not a column"
                    ))),
                })
                .collect::<Result<_>>()?,
            true,
        ),
        other => {
            return Err(Error::InvalidDefinition(format!(
                "primary key element {other} is not a column"
            )));
        }
    };
    Ok(KeyElement {
        columns,
        grouped,
        hash,
        desc,
    })
}

/// Column `col` of table `table` as declared: its type, NOT NULL, DEFAULT, and the sequence
/// of a serial or identity column. Its constraints (PRIMARY KEY, UNIQUE, REFERENCES,
/// CHECK) are left to the caller.
/// `user` holds the types made by CREATE TYPE.
pub fn column_from_ast(table: &str, col: &ast::ColumnDef, user: &[SqlType]) -> Result<ColumnDef> {
    let col_name = normalize_ident(&col.name);
    let ty = SqlType::from_ast_with(&col.data_type, user)?;
    let serial = matches!(&col.data_type, ast::DataType::Custom(n, _)
    if matches!(
        n.to_string().to_ascii_lowercase().as_str(),
        "serial" | "serial2" | "serial4" | "serial8" | "smallserial" | "bigserial"
    ));
    let mut def = ColumnDef {
        nullable: !serial,
        default: serial.then(|| crate::catalog::serial_default(table, &col_name)),
        ..ColumnDef::new(col_name.clone(), ty)
    };
    for opt in &col.options {
        match &opt.option {
            ColumnOption::Null => def.nullable = true,
            ColumnOption::NotNull => def.nullable = false,
            // DEFAULT NULL is no default, as PostgreSQL keeps none for it.
            ColumnOption::Default(expr) => {
                def.default = (!is_null_literal(expr)).then(|| default_text(expr))
            }
            ColumnOption::PrimaryKey(_)
            | ColumnOption::Unique(_)
            | ColumnOption::ForeignKey(_)
            | ColumnOption::Check(_)
            | ColumnOption::Comment(_) => {}
            // A generated column stores its expression's value over the row.
            ColumnOption::Generated {
                generation_expr: Some(expr),
                generation_expr_mode,
                ..
            } => {
                if *generation_expr_mode != Some(ast::GeneratedExpressionMode::Stored) {
                    return Err(Error::Unsupported("virtual generated columns".into()));
                }
                def.generated = Some(bare_condition(expr));
            }
            // An identity column takes its values from a sequence, as serial does.
            ColumnOption::Generated {
                generated_as,
                generation_expr: None,
                sequence_options,
                ..
            } => {
                if let Some(given) = sequence_options.as_ref().filter(|o| !o.is_empty()) {
                    let given = crate::sequence::from_ast(given)?;
                    let (options, _) =
                        crate::SequenceOptions::of_type(def.ty).with(&given, true)?;
                    def.sequence_options = Some(options);
                }
                def.nullable = false;
                def.default = Some(crate::catalog::serial_default(table, &col_name));
                def.identity = Some(match generated_as {
                    ast::GeneratedAs::ByDefault => crate::catalog::Identity::ByDefault,
                    _ => crate::catalog::Identity::Always,
                });
            }
            other => return Err(Error::Unsupported(format!("column option {other}"))),
        }
    }
    // A serial column's default is its sequence's next value.
    let other = match () {
        _ if def.identity.is_some() => Some("identity"),
        _ if def.default.is_some() => Some("default"),
        _ => None,
    };
    if let (Some(_), Some(other)) = (&def.generated, other) {
        return Err(Error::Syntax(format!(
            "both {other} and generation expression specified for column \"{col_name}\" of table \"{table}\""
        )));
    }
    Ok(def)
}

fn option_text(value: &Expr) -> Option<String> {
    match value {
        Expr::Value(v) => match &v.value {
            AstValue::SingleQuotedString(s) | AstValue::DoubleQuotedString(s) => Some(s.clone()),
            AstValue::Number(n, _) => Some(n.clone()),
            _ => None,
        },
        Expr::Identifier(id) => Some(id.value.clone()),
        _ => None,
    }
}

/// Builds the definition of a new table (its keyspace is assigned when it is created);
/// `user` holds the types made by CREATE TYPE.
pub fn table_def_from_create(create: &ast::CreateTable, user: &[SqlType]) -> Result<TableDef> {
    let name = table_name(&create.name)?;
    if create.query.is_some() {
        return Err(Error::Unsupported("CREATE TABLE … AS".into()));
    }
    let mut columns: Vec<ColumnDef> = Vec::new();
    let mut checks: Vec<(Option<String>, Expr)> = Vec::new();
    let mut primary: Option<Vec<IndexColumn>> = None;
    let mut pkey_name: Option<String> = None;
    let mut set_primary = |cols: Vec<IndexColumn>| -> Result<()> {
        if primary.replace(cols).is_some() {
            return Err(Error::InvalidDefinition(format!(
                "multiple primary keys for table \"{name}\" are not allowed"
            )));
        }
        Ok(())
    };
    for col in &create.columns {
        let col_name = normalize_ident(&col.name);
        if columns.iter().any(|c| c.name == col_name) {
            return Err(Error::DuplicateColumn(col_name));
        }
        let mut def = column_from_ast(&name, col, user)?;
        for opt in &col.options {
            match &opt.option {
                ColumnOption::PrimaryKey(_) => {
                    pkey_name = opt.name.as_ref().map(normalize_ident);
                    def.nullable = false;
                    set_primary(vec![IndexColumn::from(col.name.clone())])?;
                }
                ColumnOption::Check(check) => {
                    let name = opt.name.as_ref().or(check.name.as_ref());
                    checks.push((name.map(normalize_ident), (*check.expr).clone()));
                }
                // A unique index made with the table (`unique_constraints`); a foreign key,
                // resolved against the referenced table once the table exists
                // (`foreign_keys`).
                _ => {}
            }
        }
        columns.push(def);
    }
    for constraint in &create.constraints {
        match constraint {
            TableConstraint::PrimaryKey(pk) => {
                pkey_name = pk.name.as_ref().map(normalize_ident);
                set_primary(pk.columns.clone())?
            }
            TableConstraint::Unique(_) => {}
            TableConstraint::ForeignKey(_) => {}
            TableConstraint::Check(check) => {
                checks.push((
                    check.name.as_ref().map(normalize_ident),
                    (*check.expr).clone(),
                ));
            }
            other => return Err(Error::Unsupported(format!("table constraint {other}"))),
        }
    }

    let mut partition_key_option: Option<Vec<String>> = None;
    let options = match &create.table_options {
        CreateTableOptions::None => &[][..],
        CreateTableOptions::With(opts) => opts.as_slice(),
        other => return Err(Error::Unsupported(format!("table options {other}"))),
    };
    for opt in options {
        match opt {
            SqlOption::KeyValue { key, value } if normalize_ident(key) == "partition_key" => {
                let text = option_text(value).ok_or_else(|| {
                    Error::InvalidDefinition("partition_key must be a string such as 'a,b'".into())
                })?;
                partition_key_option = Some(
                    text.split(',')
                        .map(|s| s.trim().to_lowercase())
                        .filter(|s| !s.is_empty())
                        .collect(),
                );
            }
            other => return Err(Error::Unsupported(format!("table option {other}"))),
        }
    }

    let find = |columns: &[ColumnDef], n: &str| -> Result<usize> {
        columns.iter().position(|c| c.name == n).ok_or_else(|| {
            Error::InvalidDefinition(format!("column \"{n}\" named in key does not exist"))
        })
    };

    let mut partition_key = Vec::new();
    let mut row_key = Vec::new();
    let hash_buckets;
    match primary {
        None => {
            if partition_key_option.is_some() {
                return Err(Error::InvalidDefinition(
                    "partition_key needs a PRIMARY KEY".into(),
                ));
            }
            columns.push(ColumnDef {
                nullable: false,
                hidden: true,
                ..ColumnDef::new(ROW_ID_COLUMN, SqlType::Int8)
            });
            partition_key.push(columns.len() - 1);
            hash_buckets = DEFAULT_HASH_BUCKETS;
        }
        Some(elements) => {
            let elements = elements
                .iter()
                .map(key_element)
                .collect::<Result<Vec<_>>>()?;
            for (i, el) in elements.iter().enumerate() {
                if i > 0 && (el.grouped && el.columns.len() > 1 || el.hash) {
                    return Err(Error::InvalidDefinition(
                        "only the first primary key element can be a partition key group or HASH"
                            .into(),
                    ));
                }
            }
            let first = &elements[0];
            let rest = if let Some(pk_names) = &partition_key_option {
                if first.grouped && first.columns.len() > 1 {
                    return Err(Error::InvalidDefinition("give the partition key either in parentheses or as partition_key, not both".into()));
                }
                let all: Vec<&KeyElement> = elements.iter().collect();
                let names: Vec<&String> = all.iter().flat_map(|e| &e.columns).collect();
                if names.len() < pk_names.len() || names.iter().zip(pk_names).any(|(a, b)| *a != b)
                {
                    return Err(Error::InvalidDefinition(
                        "partition_key must name the leading columns of the primary key".into(),
                    ));
                }
                for n in pk_names {
                    partition_key.push(find(&columns, n)?);
                }
                hash_buckets = if first.hash { DEFAULT_HASH_BUCKETS } else { 0 };
                // Remaining columns, element by element after the partition-key prefix.
                all.into_iter().skip(pk_names.len()).collect::<Vec<_>>()
            } else {
                if first.desc {
                    return Err(Error::InvalidDefinition(
                        "the partition key cannot be DESC; only row key columns have a direction"
                            .into(),
                    ));
                }
                for n in &first.columns {
                    partition_key.push(find(&columns, n)?);
                }
                hash_buckets = if first.hash { DEFAULT_HASH_BUCKETS } else { 0 };
                elements.iter().skip(1).collect()
            };
            for el in rest {
                for n in &el.columns {
                    row_key.push(RowKeyPart {
                        column: find(&columns, n)?,
                        desc: el.desc,
                    });
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for &i in partition_key
        .iter()
        .chain(row_key.iter().map(|p| &p.column))
    {
        if !seen.insert(i) {
            return Err(Error::InvalidDefinition(format!(
                "column \"{}\" appears twice in primary key constraint",
                columns[i].name
            )));
        }
        let col = &mut columns[i];
        if !col.ty.scalar().is_keyable() {
            return Err(Error::InvalidDefinition(format!(
                "column \"{}\" of type {} cannot be part of a key",
                col.name, col.ty
            )));
        }
        col.nullable = false;
    }
    let mut def = TableDef {
        name,
        keyspace: 0,
        columns,
        partition_key,
        row_key,
        hash_buckets,
        schema_version: 1,
        missing_values: Default::default(),
        indexes: Vec::new(),
        view: None,
        views: Vec::new(),
        checks: Vec::new(),
        sequence_keyspace: None,
        foreign_keys: Vec::new(),
        referenced_by: Vec::new(),
        pkey_name,
        comment: None,
        temp_schema: None,
        on_commit: None,
    };
    for (name, expr) in checks {
        let check = check_def(&def, name, &expr)?;
        def.checks.push(check);
    }
    Ok(def)
}

/// A CHECK constraint of `table`, named as PostgreSQL names it when no name is given:
/// `<table>_<column>_check` when the condition reads one column, else `<table>_check`,
/// numbered on when the name is taken.
pub fn check_def(table: &TableDef, name: Option<String>, expr: &Expr) -> Result<CheckDef> {
    let mut subquery = false;
    let _ = ast::visit_expressions(expr, |e| {
        subquery |= matches!(
            e,
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
        );
        std::ops::ControlFlow::<()>::Continue(())
    });
    if subquery {
        return Err(Error::Unsupported("subqueries in CHECK constraints".into()));
    }
    let mut read = columns_read(expr);
    read.retain(|c| table.column_index(c).is_some());
    read.sort();
    read.dedup();
    let name = match name {
        Some(name) => {
            if table.checks.iter().any(|c| c.name == name) {
                return Err(Error::DuplicateObject(format!(
                    "check constraint \"{name}\" already exists"
                )));
            }
            name
        }
        None => {
            let base = match read.as_slice() {
                [column] => format!("{}_{column}_check", table.name),
                _ => format!("{}_check", table.name),
            };
            let mut name = base.clone();
            let mut n = 0;
            while table.checks.iter().any(|c| c.name == name) {
                n += 1;
                name = format!("{base}{n}");
            }
            name
        }
    };
    Ok(CheckDef {
        name,
        expr: bare_condition(expr),
        not_valid: false,
    })
}

/// A condition over one table's columns as kept in the catalog: columns bare (`t.a` is
/// `a`), so it reads the same after the table is renamed, and quoted only where the name
/// needs it (`"a"` is `a`), as PostgreSQL shows it.
pub fn bare_condition(expr: &Expr) -> String {
    let mut bare = expr.clone();
    let _ = ast::visit_expressions_mut(&mut bare, |e| {
        if let Expr::CompoundIdentifier(parts) = e
            && parts.len() > 1
            && let Some(last) = parts.last()
        {
            *e = Expr::Identifier(last.clone());
        }
        if let Expr::Identifier(id) = e
            && id.quote_style == Some('"')
            && plain_name(&id.value)
        {
            id.quote_style = None;
        }
        // Type names in lower case (`id::text`), as PostgreSQL shows them.
        if let Expr::Cast { data_type, .. } = e {
            let name = data_type.to_string().to_lowercase();
            *data_type =
                ast::DataType::Custom(ast::ObjectName::from(vec![Ident::new(name)]), vec![]);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    bare.to_string()
}

/// Whether `name` reads the same unquoted: lower-case letters, digits and underscores, not
/// starting with a digit, and no keyword.
fn plain_name(name: &str) -> bool {
    use datafusion::sql::sqlparser::keywords::ALL_KEYWORDS;
    name.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.chars().next().is_some_and(|c| !c.is_ascii_digit())
        && !ALL_KEYWORDS.contains(&name.to_ascii_uppercase().as_str())
}

/// The column names an expression reads (the last part of each identifier), folded.
pub fn columns_read(expr: &Expr) -> Vec<String> {
    let mut read = Vec::new();
    let _ = ast::visit_expressions(expr, |e| {
        match e {
            Expr::Identifier(id) => read.push(normalize_ident(id)),
            Expr::CompoundIdentifier(parts) => read.extend(parts.last().map(normalize_ident)),
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    read
}

/// A UNIQUE constraint of CREATE TABLE: a unique index made with the table.
#[derive(Debug, Clone, PartialEq)]
pub struct UniqueConstraint {
    pub name: Option<String>,
    pub columns: Vec<String>,
}

/// The UNIQUE constraints of CREATE TABLE, column-level and table-level, in order.
pub fn unique_constraints(create: &ast::CreateTable) -> Result<Vec<UniqueConstraint>> {
    let mut out = Vec::new();
    for col in &create.columns {
        for opt in &col.options {
            if let ColumnOption::Unique(u) = &opt.option {
                out.push(UniqueConstraint {
                    name: opt.name.as_ref().or(u.name.as_ref()).map(normalize_ident),
                    columns: vec![normalize_ident(&col.name)],
                });
            }
        }
    }
    for constraint in &create.constraints {
        if let TableConstraint::Unique(u) = constraint {
            out.push(unique_constraint(u)?);
        }
    }
    Ok(out)
}

/// A table-level `UNIQUE (a, b)` (in CREATE TABLE or ALTER TABLE ADD CONSTRAINT).
pub fn unique_constraint(u: &ast::UniqueConstraint) -> Result<UniqueConstraint> {
    if u.nulls_distinct == ast::NullsDistinctOption::NotDistinct {
        return Err(Error::Unsupported("NULLS NOT DISTINCT".into()));
    }
    let columns = u
        .columns
        .iter()
        .map(|c| match &c.column.expr {
            Expr::Identifier(id) => Ok(normalize_ident(id)),
            other => Err(Error::Unsupported(format!(
                "UNIQUE on an expression ({other})"
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(UniqueConstraint {
        name: u.name.as_ref().map(normalize_ident),
        columns,
    })
}

/// A FOREIGN KEY constraint as written, before the planner resolves it against the
/// referenced table.
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignKeySpec {
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub table: String,
    /// Empty when not given: the referenced table's primary key.
    pub referenced: Vec<String>,
    pub on_delete: ReferentialAction,
    pub on_update: ReferentialAction,
    pub match_full: bool,
    pub deferrable: bool,
    pub initially_deferred: bool,
}

/// The FOREIGN KEY constraints of CREATE TABLE, column-level (`REFERENCES p (id)`) and
/// table-level, in order.
pub fn foreign_keys(create: &ast::CreateTable) -> Result<Vec<ForeignKeySpec>> {
    let mut out = Vec::new();
    for col in &create.columns {
        out.extend(column_foreign_keys(col)?);
    }
    for constraint in &create.constraints {
        if let TableConstraint::ForeignKey(fk) = constraint {
            out.push(foreign_key(fk)?);
        }
    }
    Ok(out)
}

/// The `REFERENCES p (x)` options of one column (in CREATE TABLE or ALTER TABLE ADD COLUMN).
pub fn column_foreign_keys(col: &ast::ColumnDef) -> Result<Vec<ForeignKeySpec>> {
    let mut out = Vec::new();
    for opt in &col.options {
        if let ColumnOption::ForeignKey(fk) = &opt.option {
            let mut spec = foreign_key(fk)?;
            spec.columns = vec![normalize_ident(&col.name)];
            if let Some(name) = &opt.name {
                spec.name = Some(normalize_ident(name));
            }
            out.push(spec);
        }
    }
    Ok(out)
}

/// A table-level `FOREIGN KEY (a) REFERENCES p (x) …` (in CREATE TABLE or ALTER TABLE ADD
/// CONSTRAINT).
pub fn foreign_key(fk: &ast::ForeignKeyConstraint) -> Result<ForeignKeySpec> {
    let action = |a: Option<ast::ReferentialAction>| match a {
        None | Some(ast::ReferentialAction::NoAction) => ReferentialAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => ReferentialAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => ReferentialAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => ReferentialAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => ReferentialAction::SetDefault,
    };
    if fk.match_kind == Some(ast::ConstraintReferenceMatchKind::Partial) {
        return Err(Error::Unsupported("MATCH PARTIAL".into()));
    }
    if let Some(c) = &fk.characteristics
        && c.enforced == Some(false)
    {
        return Err(Error::Unsupported("foreign keys not enforced".into()));
    }
    let initially_deferred = fk
        .characteristics
        .as_ref()
        .is_some_and(|c| c.initially == Some(ast::DeferrableInitial::Deferred));
    // INITIALLY DEFERRED implies DEFERRABLE, as in PostgreSQL.
    let deferrable = initially_deferred
        || fk
            .characteristics
            .as_ref()
            .is_some_and(|c| c.deferrable == Some(true));
    if initially_deferred
        && fk
            .characteristics
            .as_ref()
            .is_some_and(|c| c.deferrable == Some(false))
    {
        return Err(Error::Syntax(
            "constraint declared INITIALLY DEFERRED must be DEFERRABLE".into(),
        ));
    }
    Ok(ForeignKeySpec {
        name: fk.name.as_ref().map(normalize_ident),
        columns: fk.columns.iter().map(normalize_ident).collect(),
        table: table_name(&fk.foreign_table)?,
        referenced: fk.referred_columns.iter().map(normalize_ident).collect(),
        on_delete: action(fk.on_delete),
        on_update: action(fk.on_update),
        match_full: fk.match_kind == Some(ast::ConstraintReferenceMatchKind::Full),
        deferrable,
        initially_deferred,
    })
}

/// A DEFAULT expression as the catalog keeps it: `nextval('s'::regclass)`, as PostgreSQL
/// prints a sequence's default, is kept as `nextval('s')`, the form serial columns have.
/// `NULL`, or `NULL` cast to a type.
fn is_null_literal(expr: &ast::Expr) -> bool {
    match expr {
        ast::Expr::Value(v) => matches!(v.value, ast::Value::Null),
        ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => is_null_literal(expr),
        _ => false,
    }
}

pub fn default_text(expr: &ast::Expr) -> String {
    let mut expr = expr.clone();
    let _ = ast::visit_expressions_mut(&mut expr, |e| {
        if let ast::Expr::Function(f) = e
            && f.name.to_string().eq_ignore_ascii_case("nextval")
            && let ast::FunctionArguments::List(list) = &mut f.args
            && let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] =
                list.args.as_mut_slice()
        {
            // `'s'::regclass` (the planner's catalog rewrite has already made it `'s'`).
            if let ast::Expr::Cast {
                expr: inner,
                data_type: ast::DataType::Regclass,
                ..
            } = arg
            {
                *arg = (**inner).clone();
            }
            // The sequence's name as the catalog spells it (`'public.S'` is `s`).
            if let ast::Expr::Value(v) = arg
                && let ast::Value::SingleQuotedString(name) = &mut v.value
            {
                *name = crate::catalog::regclass_text(&crate::sequence::regclass_name(name));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    expr.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn def(sql: &str) -> Result<TableDef> {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0);
        match stmt {
            ast::Statement::CreateTable(c) => table_def_from_create(&c, &[]),
            other => panic!("not a create table: {other}"),
        }
    }

    fn key(sql: &str) -> String {
        match def(sql) {
            Ok(d) => d.key_description(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn key_forms() {
        let cases = [
            (
                "CREATE TABLE r (event text, distance text, bib int, PRIMARY KEY ((event, distance), bib))",
                "((event, distance), bib)",
            ),
            (
                "CREATE TABLE p (card_id int, order_no int, PRIMARY KEY (card_id, order_no))",
                "((card_id), order_no)",
            ),
            ("CREATE TABLE c (id int PRIMARY KEY, v text)", "((id))"),
            (
                "CREATE TABLE h (order_no bigint, line int, PRIMARY KEY ((order_no) HASH, line))",
                "((order_no) HASH, line)",
            ),
            (
                "CREATE TABLE d (a int, b int, c int, PRIMARY KEY ((a), b DESC, c))",
                "((a), b DESC, c)",
            ),
            (
                "CREATE TABLE w (a int, b int, c int, PRIMARY KEY (a, b, c)) WITH (partition_key = 'a,b')",
                "((a, b), c)",
            ),
            ("CREATE TABLE n (a int, b text)", "((_rowid) HASH)"),
            (
                "CREATE TABLE j (a json PRIMARY KEY)",
                "error: column \"a\" of type json cannot be part of a key",
            ),
            (
                "CREATE TABLE x (a int, PRIMARY KEY (b))",
                "error: column \"b\" named in key does not exist",
            ),
            (
                "CREATE TABLE y (a int PRIMARY KEY, b int, PRIMARY KEY (b))",
                "error: multiple primary keys for table \"y\" are not allowed",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(key(sql), want, "{sql}");
        }
    }

    #[test]
    fn columns_types_and_constraints() {
        let d = def("CREATE TABLE t (id int PRIMARY KEY, name varchar(20) NOT NULL, price numeric(10,2) DEFAULT 0, \"Mixed\" text)").unwrap();
        assert_eq!(d.columns[1].ty, SqlType::Varchar { length: Some(20) });
        assert!(!d.columns[0].nullable && !d.columns[1].nullable && d.columns[2].nullable);
        assert_eq!(d.columns[2].default.as_deref(), Some("0"));
        assert_eq!(d.columns[3].name, "Mixed");
        assert!(matches!(
            def("CREATE TABLE t (a int, a int)"),
            Err(Error::DuplicateColumn(_))
        ));
        // PostgreSQL's precisions up to 1000 are taken; Arrow's scale ends at 38.
        let wide = def("CREATE TABLE t (a numeric(65,30))").unwrap();
        assert_eq!(
            wide.columns[0].ty.arrow(),
            datafusion::arrow::datatypes::DataType::Decimal128(38, 30)
        );
        assert_eq!(wide.columns[0].ty.to_string(), "numeric(65,30)");
        assert!(matches!(
            def("CREATE TABLE t (a numeric(1001))"),
            Err(Error::InvalidParameter(_))
        ));
        assert!(matches!(
            def("CREATE TABLE t (a numeric(50,40))"),
            Err(Error::Unsupported(_))
        ));
    }
}
