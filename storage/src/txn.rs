//! Optimistic read-write transactions: reads from one snapshot plus the transaction's own
//! buffered writes, with the read and write sets that commit-time validation checks.
//!
//! Invariant: every key or range this transaction has observed is in its read set, and every
//! key it will write is in its write set, before `commit` hands them to the store; a scan
//! records its whole requested range (conservative: it may cause conflicts a tighter record
//! would avoid, never miss one).

use crate::engine::{Direction, EngineSnapshot, KeyRange, KeyspaceId};
use crate::error::{Error, Result};
use crate::layout::{KeyLayout, check_key_size};
use crate::store::{
    CommitInfo, KeyspaceDef, KeyspaceKind, ReadView, Row, RowIter, Rows, STAMP_BYTES,
    SYSTEM_KEYSPACE, StoreInner, WriteSet,
};
use bytes::Bytes;
use std::iter::Peekable;
use std::sync::{Arc, Mutex};

/// One buffered write: the new payload (`None` deletes) and the stored size of the row it
/// replaces as of the snapshot (`None` if there was none), for range partition counts.
#[derive(Debug, Clone)]
pub(crate) struct Write {
    pub value: Option<Bytes>,
    pub old_size: Option<usize>,
}

/// What the commit leader needs from a transaction.
pub(crate) struct PendingCommit {
    pub start_seq: u64,
    pub read_points: Vec<(KeyspaceId, Bytes)>,
    pub read_ranges: Vec<(KeyspaceId, KeyRange)>,
    pub writes: WriteSet,
    pub created: Vec<KeyspaceDef>,
    pub dropped: Vec<KeyspaceId>,
    result: Mutex<Option<Result<CommitInfo>>>,
}

impl PendingCommit {
    pub(crate) fn set_result(&self, result: Result<CommitInfo>) {
        *self.result.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    }

    pub(crate) fn take_result(&self) -> Option<Result<CommitInfo>> {
        self.result.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

pub struct Transaction {
    store: Arc<StoreInner>,
    view: ReadView,
    start_seq: u64,
    read_points: Vec<(KeyspaceId, Bytes)>,
    read_ranges: Vec<(KeyspaceId, KeyRange)>,
    writes: WriteSet,
    created: Vec<KeyspaceDef>,
    dropped: Vec<KeyspaceId>,
    active: bool,
}

impl Transaction {
    pub(crate) fn new(
        store: Arc<StoreInner>,
        snapshot: Arc<dyn EngineSnapshot>,
        start_seq: u64,
    ) -> Transaction {
        Transaction {
            store,
            view: ReadView { snapshot },
            start_seq,
            read_points: Vec::new(),
            read_ranges: Vec::new(),
            writes: WriteSet::new(),
            created: Vec::new(),
            dropped: Vec::new(),
            active: true,
        }
    }

    /// The snapshot's sequence number: commits at or below it are visible to this transaction.
    pub fn start_seq(&self) -> u64 {
        self.start_seq
    }

    /// Whether the transaction has buffered any write or DDL.
    pub fn has_writes(&self) -> bool {
        !self.writes.is_empty() || !self.created.is_empty() || !self.dropped.is_empty()
    }

    /// The snapshot this transaction reads, without its own writes and without tracking.
    pub fn read_view(&self) -> &ReadView {
        &self.view
    }

    fn check_active(&self) -> Result<()> {
        if self.active {
            Ok(())
        } else {
            Err(Error::TransactionClosed)
        }
    }

    /// Reads one key, seeing this transaction's own writes.
    pub fn get(&mut self, keyspace: KeyspaceId, key: &[u8]) -> Result<Option<Row>> {
        self.check_active()?;
        let wkey = (keyspace, Bytes::copy_from_slice(key));
        if let Some(write) = self.writes.get(&wkey) {
            return Ok(write
                .value
                .as_ref()
                .map(|v| own_row(wkey.1.clone(), v.clone())));
        }
        self.read_points.push(wkey);
        self.view.get(keyspace, key)
    }

    /// Reads several keys of one keyspace.
    pub fn get_many(&mut self, keyspace: KeyspaceId, keys: &[Bytes]) -> Result<Vec<Option<Row>>> {
        keys.iter().map(|k| self.get(keyspace, k)).collect()
    }

    /// Streams the rows of `range` in `direction`, seeing this transaction's own writes as of
    /// the call.
    pub fn scan(
        &mut self,
        keyspace: KeyspaceId,
        range: &KeyRange,
        direction: Direction,
    ) -> Result<RowIter> {
        self.check_active()?;
        self.read_ranges.push((keyspace, range.clone()));
        let base = self.view.scan(keyspace, range, direction)?;
        let mut own: Vec<(Bytes, Option<Bytes>)> = self
            .writes
            .range((keyspace, Bytes::new())..)
            .take_while(|((ks, _), _)| *ks == keyspace)
            .filter(|((_, k), _)| range.contains(k))
            .map(|((_, k), w)| (k.clone(), w.value.clone()))
            .collect();
        if own.is_empty() {
            return Ok(Box::new(base));
        }
        if direction == Direction::Reverse {
            own.reverse();
        }
        Ok(Box::new(MergeIter {
            base: base.peekable(),
            own: own.into_iter().peekable(),
            direction,
        }))
    }

    /// Writes `payload` under `key`, replacing any row there.
    pub fn put(&mut self, keyspace: KeyspaceId, key: &[u8], payload: Vec<u8>) -> Result<()> {
        self.check_active()?;
        check_key_size(key.len())?;
        self.buffer(keyspace, key, Some(Bytes::from(payload)))
    }

    /// Deletes the row under `key`, if any.
    pub fn delete(&mut self, keyspace: KeyspaceId, key: &[u8]) -> Result<()> {
        self.check_active()?;
        self.buffer(keyspace, key, None)
    }

    fn buffer(&mut self, keyspace: KeyspaceId, key: &[u8], value: Option<Bytes>) -> Result<()> {
        let wkey = (keyspace, Bytes::copy_from_slice(key));
        if let Some(write) = self.writes.get_mut(&wkey) {
            write.value = value;
            return Ok(());
        }
        let old_size = self
            .view
            .snapshot
            .get(keyspace, key)?
            .map(|stored| key.len() + stored.len());
        self.writes.insert(wkey, Write { value, old_size });
        Ok(())
    }

    /// Creates a keyspace; it exists for this transaction at once and for others at commit.
    pub fn create_keyspace(
        &mut self,
        kind: KeyspaceKind,
        name: &str,
        layout: KeyLayout,
    ) -> Result<KeyspaceId> {
        self.check_active()?;
        let id = self.store.allocate_keyspace_id();
        self.store.engine.create_keyspace(id)?;
        let def = KeyspaceDef {
            id,
            kind,
            name: name.to_string(),
            layout,
        };
        self.put(SYSTEM_KEYSPACE, &KeyspaceDef::system_key(id), def.encode())?;
        self.created.push(def);
        Ok(id)
    }

    /// Drops a keyspace and its data at commit.
    pub fn drop_keyspace(&mut self, id: KeyspaceId) -> Result<()> {
        self.check_active()?;
        if let Some(pos) = self.created.iter().position(|d| d.id == id) {
            self.created.remove(pos);
            self.writes.retain(|(ks, _), _| *ks != id);
            self.writes
                .remove(&(SYSTEM_KEYSPACE, KeyspaceDef::system_key(id)));
            return Ok(());
        }
        if !self.store.keyspace_exists(id) {
            return Err(Error::UnknownKeyspace { id });
        }
        self.delete(SYSTEM_KEYSPACE, &KeyspaceDef::system_key(id))?;
        self.writes.retain(|(ks, _), _| *ks != id);
        self.dropped.push(id);
        Ok(())
    }

    /// Commits: returns once the writes are durable, or fails with `Error::Conflict` when
    /// another transaction changed what this one read or wrote since its snapshot.
    pub fn commit(mut self) -> Result<CommitInfo> {
        self.check_active()?;
        self.active = false;
        if !self.has_writes() {
            self.store.end_transaction(self.start_seq);
            return Ok(CommitInfo {
                seq: self.start_seq,
                timestamp_micros: 0,
            });
        }
        let pending = Arc::new(PendingCommit {
            start_seq: self.start_seq,
            read_points: std::mem::take(&mut self.read_points),
            read_ranges: std::mem::take(&mut self.read_ranges),
            writes: std::mem::take(&mut self.writes),
            created: std::mem::take(&mut self.created),
            dropped: std::mem::take(&mut self.dropped),
            result: Mutex::new(None),
        });
        let result = self.store.commit(Arc::clone(&pending));
        self.store.end_transaction(self.start_seq);
        if result.is_err() {
            // Keyspaces this transaction created are orphans now; the next open removes them
            // too, but there is no reason to wait.
            for def in &pending.created {
                let _ = self.store.engine.drop_keyspace(def.id);
            }
        }
        result
    }

    /// Abandons the transaction and its writes.
    pub fn rollback(mut self) {
        self.abandon();
    }

    /// The transaction's writes as they are now, to return to with `rollback_to` (SQL's
    /// SAVEPOINT). Reads are kept either way: having read more only makes the commit check
    /// stricter.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint {
            writes: self.writes.clone(),
            created: self.created.clone(),
            dropped: self.dropped.clone(),
        }
    }

    /// Undoes every write, keyspace creation and drop made since `savepoint`.
    pub fn rollback_to(&mut self, savepoint: &Savepoint) -> Result<()> {
        self.check_active()?;
        for def in &self.created {
            if !savepoint.created.iter().any(|d| d.id == def.id) {
                let _ = self.store.engine.drop_keyspace(def.id);
            }
        }
        self.writes = savepoint.writes.clone();
        self.created = savepoint.created.clone();
        self.dropped = savepoint.dropped.clone();
        Ok(())
    }

    fn abandon(&mut self) {
        if self.active {
            self.active = false;
            self.store.end_transaction(self.start_seq);
            for def in self.created.drain(..) {
                let _ = self.store.engine.drop_keyspace(def.id);
            }
        }
    }
}

/// A point in a transaction to roll back to (see `Transaction::savepoint`).
#[derive(Clone)]
pub struct Savepoint {
    writes: WriteSet,
    created: Vec<KeyspaceDef>,
    dropped: Vec<KeyspaceId>,
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.abandon();
    }
}

fn own_row(key: Bytes, value: Bytes) -> Row {
    Row {
        key,
        value,
        commit_ts: 0,
        version: 0,
    }
}

/// Merges a snapshot scan with the transaction's own writes (which win on equal keys).
struct MergeIter {
    base: Peekable<Rows>,
    own: Peekable<std::vec::IntoIter<(Bytes, Option<Bytes>)>>,
    direction: Direction,
}

impl Iterator for MergeIter {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        loop {
            let own_first = match (self.base.peek(), self.own.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) => return self.base.next(),
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some(Ok(b)), Some((k, _))) => {
                    let ord = k.cmp(&b.key);
                    let ord = if self.direction == Direction::Reverse {
                        ord.reverse()
                    } else {
                        ord
                    };
                    if ord.is_eq() {
                        self.base.next();
                        true
                    } else {
                        ord.is_lt()
                    }
                }
            };
            if own_first {
                let (key, value) = self.own.next()?;
                match value {
                    Some(v) => return Some(Ok(own_row(key, v))),
                    None => continue,
                }
            }
            return self.base.next();
        }
    }
}

const _: () = assert!(STAMP_BYTES == 16);
