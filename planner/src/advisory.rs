//! Advisory locks: `pg_advisory_lock(key)` and its family, locks on numbers an application
//! chooses, as migration tools (Rails, Flyway, golang-migrate, Prisma) take one to run alone.
//!
//! One table per database holds, for each key, what each session holds of it: exclusive or
//! shared, at session level (until unlocked or the session ends) or at transaction level
//! (until the transaction ends), each counted, since PostgreSQL's advisory locks stack. An
//! exclusive lock waits while another session holds the key at all, a shared one while
//! another holds it exclusively. A waiting session is stopped by a cancel or
//! `statement_timeout` (57014) and by `lock_timeout` (55P03); one whose wait would close a
//! cycle of sessions waiting on each other is refused at once with 40P01.
//!
//! `key` is a bigint, or two integers (a space of its own, as PostgreSQL keeps them apart).

use crate::error::Error;
use crate::interrupt::Interrupt;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a waiting session looks at its interrupt.
const WAIT_STEP: Duration = Duration::from_millis(20);

/// A lock's key: a bigint, or two integers packed into one (`pair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    value: i64,
    pair: bool,
}

impl Key {
    pub fn single(value: i64) -> Key {
        Key { value, pair: false }
    }

    pub fn pair(high: i32, low: i32) -> Key {
        Key {
            value: (i64::from(high) << 32) | i64::from(low as u32),
            pair: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Exclusive,
    Shared,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Session,
    Transaction,
}

/// What one session holds of one key: counts by mode and scope.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    exclusive: [u32; 2],
    shared: [u32; 2],
}

impl Held {
    fn counts(&mut self, mode: Mode) -> &mut [u32; 2] {
        match mode {
            Mode::Exclusive => &mut self.exclusive,
            Mode::Shared => &mut self.shared,
        }
    }

    fn holds(&self, mode: Mode) -> bool {
        let counts = match mode {
            Mode::Exclusive => self.exclusive,
            Mode::Shared => self.shared,
        };
        counts.iter().any(|&n| n > 0)
    }

    fn is_empty(&self) -> bool {
        !self.holds(Mode::Exclusive) && !self.holds(Mode::Shared)
    }
}

fn slot(scope: Scope) -> usize {
    match scope {
        Scope::Session => 0,
        Scope::Transaction => 1,
    }
}

#[derive(Debug, Default)]
struct Table {
    held: HashMap<Key, HashMap<u64, Held>>,
    /// The sessions waiting, with what they wait for.
    waiting: HashMap<u64, (Key, Mode)>,
}

impl Table {
    /// The other sessions that keep `owner` from taking `key` in `mode`: those whose holds
    /// conflict and, for a shared lock `owner` does not hold yet, those waiting for the key
    /// exclusively, which a stream of shared locks would otherwise starve.
    fn blockers(&self, owner: u64, key: Key, mode: Mode) -> Vec<u64> {
        let empty = HashMap::new();
        let holders = self.held.get(&key).unwrap_or(&empty);
        let mut found: Vec<u64> = holders
            .iter()
            .filter(|(id, held)| {
                **id != owner
                    && match mode {
                        Mode::Exclusive => !held.is_empty(),
                        Mode::Shared => held.holds(Mode::Exclusive),
                    }
            })
            .map(|(id, _)| *id)
            .collect();
        if mode == Mode::Shared && !holders.contains_key(&owner) {
            found.extend(
                self.waiting
                    .iter()
                    .filter(|(id, wait)| **id != owner && **wait == (key, Mode::Exclusive))
                    .map(|(id, _)| *id),
            );
        }
        found
    }

    /// Whether `owner` waiting for `key` would wait, through other waiting sessions, on
    /// itself.
    fn closes_cycle(&self, owner: u64, key: Key, mode: Mode) -> bool {
        let mut seen = HashSet::new();
        let mut next = self.blockers(owner, key, mode);
        while let Some(id) = next.pop() {
            if id == owner {
                return true;
            }
            if !seen.insert(id) {
                continue;
            }
            if let Some(&(k, m)) = self.waiting.get(&id) {
                next.extend(self.blockers(id, k, m));
            }
        }
        false
    }

    fn take(&mut self, owner: u64, key: Key, mode: Mode, scope: Scope) {
        let held = self.held.entry(key).or_default().entry(owner).or_default();
        held.counts(mode)[slot(scope)] += 1;
    }

    fn forget_empty(&mut self, key: Key) {
        if let Some(holders) = self.held.get_mut(&key) {
            holders.retain(|_, held| !held.is_empty());
            if holders.is_empty() {
                self.held.remove(&key);
            }
        }
    }
}

/// The advisory locks of a database, shared by its sessions.
#[derive(Debug, Default)]
pub struct AdvisoryLocks {
    table: Mutex<Table>,
    /// Signalled when a lock is released.
    released: Condvar,
    next_owner: AtomicU64,
}

impl AdvisoryLocks {
    /// A handle for a new session; its locks go when it is dropped.
    pub fn owner(self: &Arc<Self>) -> AdvisoryOwner {
        AdvisoryOwner {
            locks: Arc::clone(self),
            id: self.next_owner.fetch_add(1, Ordering::Relaxed),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One session's side of the advisory locks.
#[derive(Debug)]
pub struct AdvisoryOwner {
    locks: Arc<AdvisoryLocks>,
    id: u64,
}

impl AdvisoryOwner {
    /// Takes the lock if no other session's hold conflicts (`pg_try_advisory_lock`).
    pub fn try_lock(&self, key: Key, mode: Mode, scope: Scope) -> bool {
        let mut table = self.locks.table();
        if !table.blockers(self.id, key, mode).is_empty() {
            return false;
        }
        table.take(self.id, key, mode, scope);
        true
    }

    /// Takes the lock, waiting for the sessions that hold it (`pg_advisory_lock`) until
    /// `interrupt` stops the statement or `timeout` passes.
    pub fn lock(
        &self,
        key: Key,
        mode: Mode,
        scope: Scope,
        interrupt: &Interrupt,
        timeout: Option<Duration>,
    ) -> datafusion::error::Result<()> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut table = self.locks.table();
        let mut waiting = false;
        let outcome = loop {
            if table.blockers(self.id, key, mode).is_empty() {
                table.take(self.id, key, mode, scope);
                break Ok(());
            }
            if !waiting {
                if table.closes_cycle(self.id, key, mode) {
                    break Err(external(Error::Deadlock));
                }
                table.waiting.insert(self.id, (key, mode));
                waiting = true;
            }
            if let Err(e) = interrupt.check() {
                break Err(e);
            }
            let step = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break Err(external(Error::LockTimeout));
                    }
                    left.min(WAIT_STEP)
                }
                None => WAIT_STEP,
            };
            table = self
                .locks
                .released
                .wait_timeout(table, step)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        table.waiting.remove(&self.id);
        outcome
    }

    /// Releases one session-level hold of `key` in `mode` (`pg_advisory_unlock`); false
    /// when the session holds none.
    pub fn unlock(&self, key: Key, mode: Mode) -> bool {
        let mut table = self.locks.table();
        let Some(held) = table
            .held
            .get_mut(&key)
            .and_then(|holders| holders.get_mut(&self.id))
        else {
            return false;
        };
        let count = &mut held.counts(mode)[slot(Scope::Session)];
        if *count == 0 {
            return false;
        }
        *count -= 1;
        table.forget_empty(key);
        drop(table);
        self.locks.released.notify_all();
        true
    }

    /// Releases every hold of `scope` (all of them with `None`).
    pub fn release_all(&self, scope: Option<Scope>) {
        let mut table = self.locks.table();
        let keys: Vec<Key> = table
            .held
            .iter()
            .filter(|(_, holders)| holders.contains_key(&self.id))
            .map(|(key, _)| *key)
            .collect();
        if keys.is_empty() {
            return;
        }
        for key in keys {
            if let Some(held) = table.held.get_mut(&key).and_then(|h| h.get_mut(&self.id)) {
                match scope {
                    Some(scope) => {
                        held.exclusive[slot(scope)] = 0;
                        held.shared[slot(scope)] = 0;
                    }
                    None => *held = Held::default(),
                }
            }
            table.forget_empty(key);
        }
        drop(table);
        self.locks.released.notify_all();
    }
}

impl Drop for AdvisoryOwner {
    fn drop(&mut self) {
        self.release_all(None);
    }
}

/// What a function of the family does.
#[derive(Clone, Copy)]
enum Call {
    Lock(Scope),
    TryLock(Scope),
    Unlock,
}

/// Registers the family on a session's context: `owner` is the session's side, `interrupt`
/// stops its waits, `lock_timeout` reads the setting when a wait starts.
pub(crate) fn register(
    ctx: &datafusion::execution::context::SessionContext,
    owner: &Arc<AdvisoryOwner>,
    interrupt: &Interrupt,
    lock_timeout: Arc<dyn Fn() -> Option<Duration> + Send + Sync>,
) {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{Signature, TypeSignature, Volatility};
    const FUNCTIONS: &[(&str, Call, Mode)] = &[
        (
            "pg_advisory_lock",
            Call::Lock(Scope::Session),
            Mode::Exclusive,
        ),
        (
            "pg_advisory_lock_shared",
            Call::Lock(Scope::Session),
            Mode::Shared,
        ),
        (
            "pg_advisory_xact_lock",
            Call::Lock(Scope::Transaction),
            Mode::Exclusive,
        ),
        (
            "pg_advisory_xact_lock_shared",
            Call::Lock(Scope::Transaction),
            Mode::Shared,
        ),
        (
            "pg_try_advisory_lock",
            Call::TryLock(Scope::Session),
            Mode::Exclusive,
        ),
        (
            "pg_try_advisory_lock_shared",
            Call::TryLock(Scope::Session),
            Mode::Shared,
        ),
        (
            "pg_try_advisory_xact_lock",
            Call::TryLock(Scope::Transaction),
            Mode::Exclusive,
        ),
        (
            "pg_try_advisory_xact_lock_shared",
            Call::TryLock(Scope::Transaction),
            Mode::Shared,
        ),
        ("pg_advisory_unlock", Call::Unlock, Mode::Exclusive),
        ("pg_advisory_unlock_shared", Call::Unlock, Mode::Shared),
    ];
    let signature = || {
        Signature::one_of(
            vec![
                TypeSignature::Uniform(1, vec![DataType::Int64]),
                TypeSignature::Uniform(2, vec![DataType::Int64]),
            ],
            Volatility::Volatile,
        )
    };
    for &(name, call, mode) in FUNCTIONS {
        let owner = Arc::clone(owner);
        let interrupt = interrupt.clone();
        let lock_timeout = Arc::clone(&lock_timeout);
        let returns = match call {
            // PostgreSQL's void, whose text is empty.
            Call::Lock(_) => DataType::Utf8,
            Call::TryLock(_) | Call::Unlock => DataType::Boolean,
        };
        ctx.register_udf(crate::functions::RowFunction::strict(
            name,
            signature(),
            returns,
            move |args| {
                let key = key(args)?;
                Ok(match call {
                    Call::Lock(scope) => {
                        let wait = || owner.lock(key, mode, scope, &interrupt, lock_timeout());
                        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
                            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                                tokio::task::block_in_place(wait)?
                            }
                            _ => wait()?,
                        }
                        ScalarValue::Utf8(Some(String::new()))
                    }
                    Call::TryLock(scope) => {
                        ScalarValue::Boolean(Some(owner.try_lock(key, mode, scope)))
                    }
                    Call::Unlock => ScalarValue::Boolean(Some(owner.unlock(key, mode))),
                })
            },
        ));
    }
    let owner = Arc::clone(owner);
    ctx.register_udf(datafusion::logical_expr::create_udf(
        "pg_advisory_unlock_all",
        vec![],
        DataType::Utf8,
        Volatility::Volatile,
        Arc::new(move |_| {
            owner.release_all(Some(Scope::Session));
            Ok(datafusion::logical_expr::ColumnarValue::Scalar(
                ScalarValue::Utf8(Some(String::new())),
            ))
        }),
    ));
}

/// The key of a call's arguments: one bigint, or two integers.
fn key(args: &[datafusion::common::ScalarValue]) -> datafusion::error::Result<Key> {
    use datafusion::common::ScalarValue;
    let int = |v: &ScalarValue| match v {
        ScalarValue::Int64(Some(n)) => Ok(*n),
        other => Err(datafusion::error::DataFusionError::Plan(format!(
            "advisory lock key {other} is not an integer"
        ))),
    };
    match args {
        [one] => Ok(Key::single(int(one)?)),
        [high, low] => {
            let narrow = |n: i64| {
                i32::try_from(n)
                    .map_err(|_| external(Error::NumericOverflow("integer out of range".into())))
            };
            Ok(Key::pair(narrow(int(high)?)?, narrow(int(low)?)?))
        }
        _ => Err(datafusion::error::DataFusionError::Plan(
            "advisory lock functions take one or two keys".into(),
        )),
    }
}

fn external(e: Error) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::External(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_stack_and_release() {
        let locks = Arc::new(AdvisoryLocks::default());
        let (a, b) = (locks.owner(), locks.owner());
        let key = Key::single(7);
        assert!(a.try_lock(key, Mode::Exclusive, Scope::Session));
        assert!(a.try_lock(key, Mode::Exclusive, Scope::Session));
        assert!(!b.try_lock(key, Mode::Shared, Scope::Session));
        assert!(a.unlock(key, Mode::Exclusive));
        assert!(!b.try_lock(key, Mode::Exclusive, Scope::Session));
        assert!(a.unlock(key, Mode::Exclusive));
        assert!(!a.unlock(key, Mode::Exclusive));
        // Shared holds share; an exclusive waits for all of them.
        assert!(a.try_lock(key, Mode::Shared, Scope::Transaction));
        assert!(b.try_lock(key, Mode::Shared, Scope::Session));
        assert!(!b.try_lock(key, Mode::Exclusive, Scope::Session));
        // A session waiting for the key exclusively goes before new shared holds, but not
        // before more of a shared hold already there.
        let (c, d) = (locks.owner(), locks.owner());
        locks.table().waiting.insert(d.id, (key, Mode::Exclusive));
        assert!(!c.try_lock(key, Mode::Shared, Scope::Session));
        assert!(b.try_lock(key, Mode::Shared, Scope::Session));
        assert!(b.unlock(key, Mode::Shared));
        locks.table().waiting.clear();
        assert!(c.try_lock(key, Mode::Shared, Scope::Session));
        assert!(c.unlock(key, Mode::Shared));
        a.release_all(Some(Scope::Transaction));
        assert!(b.try_lock(key, Mode::Exclusive, Scope::Session));
        // The two-integer space is not the bigint one.
        assert!(a.try_lock(Key::pair(0, 7), Mode::Exclusive, Scope::Session));
        drop(b);
        assert!(a.try_lock(key, Mode::Exclusive, Scope::Session));
    }

    #[test]
    fn a_wait_closing_a_cycle_is_a_deadlock() {
        let locks = Arc::new(AdvisoryLocks::default());
        let (a, b) = (locks.owner(), locks.owner());
        let (one, two) = (Key::single(1), Key::single(2));
        assert!(a.try_lock(one, Mode::Exclusive, Scope::Session));
        assert!(b.try_lock(two, Mode::Exclusive, Scope::Session));
        // b waits for one (as another session would); a asking for two closes the cycle.
        locks.table().waiting.insert(b.id, (one, Mode::Exclusive));
        let refused = a.lock(
            two,
            Mode::Exclusive,
            Scope::Session,
            &Interrupt::default(),
            None,
        );
        assert!(refused.is_err_and(|e| e.to_string().contains("deadlock detected")));
        // Without the cycle, a lock_timeout ends the wait.
        locks.table().waiting.clear();
        let timed_out = a.lock(
            two,
            Mode::Exclusive,
            Scope::Session,
            &Interrupt::default(),
            Some(Duration::from_millis(30)),
        );
        assert!(timed_out.is_err_and(|e| e.to_string().contains("lock timeout")));
    }
}
