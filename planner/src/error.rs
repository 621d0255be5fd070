//! The planner's one error type. Variants follow PostgreSQL's error classes; the wire layer
//! maps each to its SQLSTATE in one exhaustive match.

use datafusion::error::DataFusionError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Sql(#[from] sql::Error),

    #[error(transparent)]
    Storage(#[from] storage::Error),

    /// An error raised while planning or running a query in DataFusion; classified by the
    /// wire layer (unknown column, bad cast, division by zero, …).
    #[error("{0}")]
    DataFusion(#[from] DataFusionError),

    #[error("syntax error: {0}")]
    Syntax(String),

    #[error(
        "null value in column \"{column}\" of relation \"{table}\" violates not-null constraint"
    )]
    NotNull {
        table: String,
        column: String,
        /// The row, as "Failing row contains (…)." lists it.
        row: String,
    },

    #[error("duplicate key value violates unique constraint \"{constraint}\"")]
    UniqueViolation {
        table: String,
        constraint: String,
        detail: String,
    },

    /// Rows that give a unique index being built (CREATE UNIQUE INDEX, a table rewritten) the
    /// same key; `detail` names it ("Key (b)=(5) is duplicated.").
    #[error("could not create unique index \"{index}\"")]
    DuplicateInNewIndex {
        table: String,
        index: String,
        detail: String,
    },

    #[error("{0}")]
    StringTooLong(String),

    #[error("{0}")]
    NumericOverflow(String),

    /// A value too large for `numeric(precision, scale)`.
    #[error("numeric field overflow")]
    FieldOverflow { precision: u8, scale: u8 },

    #[error("invalid input syntax for type {ty}: \"{value}\"")]
    InvalidText { ty: String, value: String },

    /// Text that is not one of an enum's labels.
    #[error("invalid input value for enum {ty}: \"{value}\"")]
    InvalidEnumValue { ty: String, value: String },

    /// Array text that is not `{…}` with well-formed elements.
    #[error("malformed array literal: \"{0}\"")]
    MalformedArray(String),

    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    InFailedTransaction,

    /// A write in a READ ONLY transaction (25006), naming the command.
    #[error("cannot execute {0} in a read-only transaction")]
    ReadOnlyTransaction(String),

    /// A prepared statement whose result columns changed type since the client prepared
    /// it (0A000); drivers prepare it again.
    #[error("cached plan must not change result type")]
    CachedPlanChanged,

    /// Bytes that are not UTF-8, or a NUL, in text (22021).
    #[error("invalid byte sequence for encoding \"UTF8\": {0}")]
    InvalidEncoding(String),

    /// A command that must run outside a transaction block (25001).
    #[error("{0}")]
    ActiveTransaction(String),

    #[error("could not serialize access due to concurrent update")]
    SerializationFailure,

    #[error("{0} is not supported")]
    Unsupported(String),

    /// A feature PostgreSQL refuses in its own words (0A000), with what it depends on
    /// ("cannot alter type of a column used by a view or rule").
    #[error("{message}")]
    NotSupported {
        message: String,
        detail: Option<String>,
    },

    /// An aggregate where none may be (42803).
    #[error("{0}")]
    Grouping(String),

    /// A window function where none may be (42P20).
    #[error("{0}")]
    Windowing(String),

    /// A row count LIMIT or FETCH cannot take (2201W).
    #[error("{0}")]
    InvalidRowCount(String),

    /// A value that needs an explicit cast where only an assignment cast applies (42804), with
    /// the cast to write.
    #[error("{message}")]
    CannotCoerce { message: String, hint: String },

    /// A name that could mean more than one column (`ORDER BY a` after `SELECT a, b AS a`).
    #[error("{0}")]
    AmbiguousColumn(String),

    /// The statement names an object of the wrong kind (DML on a materialized view).
    #[error("{0}")]
    WrongObjectType(String),

    /// An object of the wrong kind, with what to do instead (DROP SEQUENCE of a table).
    #[error("{message}")]
    WrongObjectKind { message: String, hint: String },

    /// DROP of an object other objects depend on, without CASCADE; `detail` names them, a
    /// line each ("view v depends on table t").
    #[error("{message}")]
    DependentObjects { message: String, detail: String },

    #[error("unrecognized configuration parameter \"{0}\"")]
    UnknownSetting(String),

    #[error("invalid value for parameter \"{name}\": \"{value}\"")]
    InvalidSettingValue { name: String, value: String },

    /// SET of a parameter no session may change (55P02).
    #[error("parameter \"{0}\" cannot be changed")]
    CantChangeSetting(String),

    #[error("parameter \"{0}\" requires a Boolean value")]
    BooleanSetting(String),

    #[error("WITH query name \"{0}\" specified more than once")]
    DuplicateWithName(String),

    #[error(
        "WITH query \"{name}\" has {available} columns available but {given} columns specified"
    )]
    WithColumnCount {
        name: String,
        available: usize,
        given: usize,
    },

    #[error("cursor \"{0}\" already exists")]
    DuplicateCursor(String),

    #[error("cursor \"{0}\" does not exist")]
    UnknownCursor(String),

    #[error("{0} can only be used in transaction blocks")]
    NoTransaction(String),

    #[error("more than one row returned by a subquery used as an expression")]
    SubqueryTooManyRows,

    #[error("ON CONFLICT DO UPDATE command cannot affect row a second time")]
    UpsertRowTwice,

    #[error("there is no unique or exclusion constraint matching the ON CONFLICT specification")]
    NoConflictArbiter,

    /// A column reference the statement's form does not allow (42P10): ORDER BY of a SELECT
    /// DISTINCT an expression it does not select.
    #[error("{0}")]
    InvalidColumnReference(String),

    /// An expression of the wrong type where a type is required (a CHECK that is not a
    /// boolean).
    #[error("{0}")]
    DatatypeMismatch(String),

    /// A statement PostgreSQL's grammar rules refuse after parsing (42601), its message as
    /// PostgreSQL words it.
    #[error("{0}")]
    InvalidStatement(String),

    #[error("view \"{0}\" does not exist")]
    UnknownView(String),

    #[error("sequence \"{0}\" does not exist")]
    UnknownSequence(String),

    /// DROP of an object another cannot be without (an identity column's sequence), which
    /// CASCADE does not drop either; `hint` says what to drop instead.
    #[error("{message}")]
    RequiredObject { message: String, hint: String },

    /// An object that cannot be defined so (42P17): a view that reads itself, an index
    /// predicate calling a volatile function.
    #[error("{0}")]
    InvalidObjectDefinition(String),

    /// CREATE SCHEMA of a schema that exists (42P06).
    #[error("schema \"{0}\" already exists")]
    DuplicateSchema(String),

    /// A schema that does not exist (3F000).
    #[error("schema \"{0}\" does not exist")]
    UnknownSchema(String),

    /// An object a statement names that does not exist (a constraint to drop).
    #[error("{0}")]
    UndefinedObject(String),

    /// ALTER COLUMN SET NOT NULL over stored NULLs.
    #[error("column \"{column}\" of relation \"{table}\" contains null values")]
    NullsInColumn { table: String, column: String },

    /// A row a CHECK constraint refuses; `detail` lists the row.
    #[error("new row for relation \"{table}\" violates check constraint \"{constraint}\"")]
    CheckViolation {
        table: String,
        constraint: String,
        detail: String,
    },

    /// A row whose referencing values have no referenced row, or a referenced row still
    /// referenced (23503); `detail` names the key, `table` the referencing table.
    #[error("{message}")]
    ForeignKeyViolation {
        table: String,
        constraint: String,
        message: String,
        detail: String,
    },

    /// TRUNCATE of a table another table references, without that table or CASCADE (0A000).
    #[error("cannot truncate a table referenced in a foreign key constraint")]
    TruncateReferenced { table: String, child: String },

    /// PREPARE of a name already prepared (42P05).
    #[error("prepared statement \"{0}\" already exists")]
    DuplicatePrepared(String),

    /// EXECUTE or DEALLOCATE of a name not prepared (26000).
    #[error("prepared statement \"{0}\" does not exist")]
    UnknownPrepared(String),

    /// Work past a limit of Partita's (referential actions that do not settle): 54001.
    #[error("{0}")]
    TooComplex(String),

    /// A FOREIGN KEY whose column types cannot be compared (42804).
    #[error("foreign key constraint \"{constraint}\" cannot be implemented")]
    ForeignKeyTypes { constraint: String, detail: String },

    /// A FOREIGN KEY that names no unique set of columns, or as many on both sides (42830).
    #[error("{0}")]
    InvalidForeignKey(String),

    /// A column a definition names that the table does not have, with PostgreSQL's own
    /// wording for the place (42703).
    #[error("{0}")]
    UndefinedColumn(String),

    /// ALTER TABLE ADD CONSTRAINT … CHECK that a stored row fails.
    #[error("check constraint \"{constraint}\" of relation \"{table}\" is violated by some row")]
    CheckViolatedByRow { table: String, constraint: String },

    #[error("constraint \"{constraint}\" for table \"{table}\" does not exist")]
    UnknownConstraint { constraint: String, table: String },

    #[error("canceling statement due to user request")]
    Canceled,

    #[error("canceling statement due to statement timeout")]
    StatementTimeout,

    /// A lock wait that would close a cycle of sessions waiting on each other.
    #[error("deadlock detected")]
    Deadlock,

    /// A lock wait longer than `lock_timeout`.
    #[error("canceling statement due to lock timeout")]
    LockTimeout,

    #[error("{class} on table \"{table}\" is not allowed by partita.max_scan_class = {allowed}")]
    ScanClassNotAllowed {
        class: String,
        table: String,
        allowed: String,
    },

    /// A call with arguments no function of that name takes (42883).
    #[error("function {0} does not exist")]
    UndefinedFunction(String),

    /// A comparison PostgreSQL has no operator for ("text = integer").
    #[error("operator does not exist: {0}")]
    UndefinedOperator(String),

    /// A value a function cannot take (`jsonb_array_length` of an object): 22023.
    #[error("{0}")]
    InvalidParameterValue(String),

    /// An argument outside a logarithm's domain (2201E): zero or below.
    #[error("{0}")]
    InvalidLogarithmArgument(String),

    /// An argument outside the domain of `power` or `sqrt` (2201F).
    #[error("{0}")]
    InvalidPowerArgument(String),

    /// `width_bucket` bounds or count it cannot use (2201G).
    #[error("{0}")]
    InvalidWidthBucket(String),

    /// A regular expression or its flags that do not compile (2201B).
    #[error("invalid regular expression: {0}")]
    InvalidRegex(String),

    /// Text that does not match a `to_date`/`to_timestamp` template (22007).
    #[error("{0}")]
    InvalidDatetimeFormat(String),

    /// A date or time field out of its range (22008).
    #[error("{0}")]
    DatetimeOutOfRange(String),

    /// Something asked before what it needs happened (`currval` before `nextval`): 55000.
    #[error("{0}")]
    NotInPrerequisiteState(String),

    /// An escape string of more than one character (`SIMILAR TO … ESCAPE 'ab'`): 22025.
    #[error("{0}")]
    InvalidEscape(String),

    /// A value given for a `GENERATED ALWAYS` identity column (428C9), by an INSERT without
    /// `OVERRIDING SYSTEM VALUE` (`insert`) or an UPDATE, or for a generated column
    /// (`expression`), which takes none.
    #[error("{}", match insert {
        true => format!("cannot insert a non-DEFAULT value into column \"{column}\""),
        false => format!("column \"{column}\" can only be updated to DEFAULT"),
    })]
    GeneratedAlways {
        column: String,
        insert: bool,
        expression: bool,
    },

    /// Beyond a size Partita allows (54000).
    #[error("{0}")]
    ProgramLimit(String),

    /// A NULL where a function needs a value (`format('%I', NULL)`): 22004.
    #[error("{0}")]
    NullValueNotAllowed(String),

    #[error("savepoint \"{0}\" does not exist")]
    UnknownSavepoint(String),

    #[error("could not open \"{0}\" for reading: no such file or object")]
    NoSuchFile(String),

    /// A bad file name or URL (42602).
    #[error("{0}")]
    InvalidName(String),

    /// Reading or writing an object store failed (58030).
    #[error("could not access object store: {0}")]
    ObjectStore(String),

    /// Malformed COPY data (22P04).
    #[error("{0}")]
    BadCopyData(String),

    /// An error and where it happened ("COPY t, line 3"), sent as the error's context.
    #[error("{source}")]
    Context {
        context: String,
        #[source]
        source: Box<Error>,
    },

    /// An error at a character of the query text (counted from 1, as PostgreSQL's error
    /// position), which psql shows under the query's line.
    #[error("{source}")]
    At {
        position: usize,
        #[source]
        source: Box<Error>,
    },

    /// An error a DO block raised (`RAISE EXCEPTION`), or one PL/pgSQL words itself, with
    /// the SQLSTATE, DETAIL and HINT it gave.
    #[error("{message}")]
    Raised {
        code: String,
        message: String,
        detail: Option<String>,
        hint: Option<String>,
    },

    /// A bug in Partita.
    #[error("internal error (this is a bug): {0}")]
    Internal(String),
}

impl Error {
    /// Storage conflicts surface as serialization failures.
    pub fn from_storage(e: storage::Error) -> Error {
        match e {
            storage::Error::Conflict => Error::SerializationFailure,
            e => Error::Storage(e),
        }
    }
}
