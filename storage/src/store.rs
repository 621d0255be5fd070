//! The store: keyspaces over an engine, optimistic transactions, group commit, range partitions.
//!
//! Commit path. A committing transaction joins a queue; one committer at a time becomes the
//! leader, takes every queued commit, validates each against the commits that happened after
//! its snapshot (backward validation of read and write sets), stamps the accepted ones with a
//! commit sequence number and timestamp, and writes all of them, with the range partition
//! counts they change, as one atomic engine batch with one fsync. Nothing is acknowledged
//! before that fsync returns, and the engine makes nothing visible before it either.
//!
//! Isolation. Every transaction reads one snapshot. It commits only if no key it read (point
//! or range) or wrote was written by a commit with a higher sequence number than its
//! snapshot's; so the committed transactions are serializable in commit order, and a
//! read-only transaction at its snapshot is too.
//!
//! Invariant: `visible_seq` only grows, and every commit with a sequence number at or below it
//! is in every snapshot taken after it was read.

use crate::engine::{
    Direction, Engine, EngineIter, EngineOp, EngineSnapshot, FjallEngine, KeyRange, KeyspaceId,
};
use crate::error::{Error, Result};
use crate::layout::KeyLayout;
use crate::ranges::{self, RangeMap, RangePartition, RangeStats};
use crate::rowcodec::{get_varint, put_varint};
use crate::txn::{PendingCommit, Transaction, Write};
use bytes::{Buf, Bytes};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Keyspace for the SQL layer's catalog (table definitions), written through transactions.
pub const CATALOG_KEYSPACE: KeyspaceId = 0;
/// Keyspace for the store's own records: keyspace definitions, range partitions, counters.
pub const SYSTEM_KEYSPACE: KeyspaceId = 1;
/// User keyspaces (tables, index tables, views) are numbered from here.
pub const FIRST_USER_KEYSPACE: KeyspaceId = 16;

/// Bytes of commit stamp before every value written by a transaction.
pub(crate) const STAMP_BYTES: usize = 16;

const COUNTERS_KEY: &[u8] = b"c";

#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// A range partition splits when it holds more than this many bytes.
    pub split_bytes_max: u64,
    /// Block cache size of the embedded engine.
    pub cache_bytes: u64,
}

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            split_bytes_max: 64 << 20,
            cache_bytes: 1 << 30,
        }
    }
}

/// What a keyspace stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyspaceKind {
    Table,
    Index,
    View,
}

impl KeyspaceKind {
    fn tag(self) -> u8 {
        match self {
            KeyspaceKind::Table => 1,
            KeyspaceKind::Index => 2,
            KeyspaceKind::View => 3,
        }
    }

    fn from_tag(tag: u8) -> Option<KeyspaceKind> {
        Some(match tag {
            1 => KeyspaceKind::Table,
            2 => KeyspaceKind::Index,
            3 => KeyspaceKind::View,
            _ => return None,
        })
    }
}

/// A keyspace's definition, stored in the system keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyspaceDef {
    pub id: KeyspaceId,
    pub kind: KeyspaceKind,
    pub name: String,
    pub layout: KeyLayout,
}

impl KeyspaceDef {
    pub(crate) fn system_key(id: KeyspaceId) -> Bytes {
        let mut key = vec![b'k'];
        key.extend_from_slice(&id.to_be_bytes());
        Bytes::from(key)
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, u64::from(self.id));
        out.push(self.kind.tag());
        put_varint(&mut out, self.name.len() as u64);
        out.extend_from_slice(self.name.as_bytes());
        self.layout.write_to(&mut out);
        out
    }

    pub(crate) fn decode(mut input: &[u8]) -> Result<KeyspaceDef> {
        let bad = || Error::Corrupt("keyspace definition".into());
        let id = KeyspaceId::try_from(get_varint(&mut input)?).map_err(|_| bad())?;
        let (&kind, rest) = input.split_first().ok_or_else(bad)?;
        input = rest;
        let kind = KeyspaceKind::from_tag(kind).ok_or_else(bad)?;
        let len = get_varint(&mut input)? as usize;
        if input.len() < len {
            return Err(bad());
        }
        let name = String::from_utf8(input[..len].to_vec()).map_err(|_| bad())?;
        input = &input[len..];
        let layout = KeyLayout::read_from(&mut input)?;
        Ok(KeyspaceDef {
            id,
            kind,
            name,
            layout,
        })
    }
}

/// A committed transaction's stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitInfo {
    /// Commit sequence number: the version of every row the transaction wrote.
    pub seq: u64,
    /// Commit time, microseconds since the Unix epoch; strictly increasing across commits.
    pub timestamp_micros: u64,
}

pub(crate) struct OccState {
    /// Highest sequence number whose commit is durable and visible.
    pub visible_seq: u64,
    /// Highest sequence number handed out.
    assigned_seq: u64,
    last_ts: u64,
    /// Keys written by recent commits, with the sequence number of the latest such commit.
    /// Entries at or below the oldest active snapshot can no longer cause a conflict.
    recent: BTreeMap<(KeyspaceId, Bytes), u64>,
    /// Start sequence numbers of active read-write transactions, with counts.
    active: BTreeMap<u64, usize>,
}

struct CommitQueue {
    pending: Vec<Arc<PendingCommit>>,
    leader_active: bool,
}

pub(crate) struct StoreInner {
    pub(crate) engine: Arc<dyn Engine>,
    options: StoreOptions,
    registry: RwLock<HashMap<KeyspaceId, Arc<KeyspaceDef>>>,
    next_keyspace_id: AtomicU32,
    pub(crate) occ: Mutex<OccState>,
    queue: Mutex<CommitQueue>,
    queue_cv: Condvar,
    ranges: Mutex<RangeMap>,
    poisoned: AtomicBool,
}

/// The store. Cheap to clone; all clones share one engine and one commit pipeline.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks is a bug elsewhere; the state it guards is
    // still consistent (every update is a single assignment), so keep going.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

impl Store {
    /// Opens (or creates) the store in `path` on the embedded engine.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Store> {
        let engine = FjallEngine::open(path, options.cache_bytes)?;
        Store::open_engine(Arc::new(engine), options)
    }

    /// Opens the store on any engine.
    pub fn open_engine(engine: Arc<dyn Engine>, options: StoreOptions) -> Result<Store> {
        engine.create_keyspace(CATALOG_KEYSPACE)?;
        engine.create_keyspace(SYSTEM_KEYSPACE)?;
        let snapshot = engine.snapshot();

        let mut registry = HashMap::new();
        for item in snapshot.scan(SYSTEM_KEYSPACE, &KeyRange::prefix(b"k"), Direction::Forward)? {
            let (_, value) = item?;
            let def = KeyspaceDef::decode(strip_stamp(&value)?)?;
            registry.insert(def.id, Arc::new(def));
        }

        let mut range_map = RangeMap::default();
        let mut stale = Vec::new();
        for item in snapshot.scan(SYSTEM_KEYSPACE, &KeyRange::prefix(b"r"), Direction::Forward)? {
            let (key, value) = item?;
            let (ks, start, stats) = ranges::parse_record(&key, &value)?;
            if ks >= FIRST_USER_KEYSPACE && !registry.contains_key(&ks) {
                stale.push(EngineOp::Delete {
                    keyspace: SYSTEM_KEYSPACE,
                    key,
                });
                continue;
            }
            range_map.insert_loaded(ks, start, stats);
        }

        // Keyspaces created by transactions that never committed, or dropped just before a
        // crash, are removed now.
        let mut max_id = FIRST_USER_KEYSPACE - 1;
        for id in engine.keyspaces()? {
            max_id = max_id.max(id);
            if id >= FIRST_USER_KEYSPACE && !registry.contains_key(&id) {
                engine.drop_keyspace(id)?;
            }
        }
        for id in registry.keys() {
            max_id = max_id.max(*id);
        }
        if !stale.is_empty() {
            engine.write(stale, true)?;
        }

        let (seq, ts) = match snapshot.get(SYSTEM_KEYSPACE, COUNTERS_KEY)? {
            Some(v) if v.len() == 16 => (
                u64::from_le_bytes(
                    v[..8]
                        .try_into()
                        .map_err(|_| Error::Corrupt("counters".into()))?,
                ),
                u64::from_le_bytes(
                    v[8..]
                        .try_into()
                        .map_err(|_| Error::Corrupt("counters".into()))?,
                ),
            ),
            Some(_) => return Err(Error::Corrupt("counters record".into())),
            None => (0, 0),
        };

        Ok(Store {
            inner: Arc::new(StoreInner {
                engine,
                options,
                registry: RwLock::new(registry),
                next_keyspace_id: AtomicU32::new(max_id + 1),
                occ: Mutex::new(OccState {
                    visible_seq: seq,
                    assigned_seq: seq,
                    last_ts: ts,
                    recent: BTreeMap::new(),
                    active: BTreeMap::new(),
                }),
                queue: Mutex::new(CommitQueue {
                    pending: Vec::new(),
                    leader_active: false,
                }),
                queue_cv: Condvar::new(),
                ranges: Mutex::new(range_map),
                poisoned: AtomicBool::new(false),
            }),
        })
    }

    /// Starts a read-write transaction on a fresh snapshot.
    pub fn begin(&self) -> Transaction {
        let start_seq = {
            let mut occ = lock(&self.inner.occ);
            let seq = occ.visible_seq;
            *occ.active.entry(seq).or_default() += 1;
            seq
        };
        // Taken after reading `visible_seq`, so it holds every commit at or below it.
        let snapshot = self.inner.engine.snapshot();
        Transaction::new(Arc::clone(&self.inner), snapshot, start_seq)
    }

    /// A read-only view of the latest committed state.
    pub fn snapshot(&self) -> ReadView {
        ReadView {
            snapshot: self.inner.engine.snapshot(),
        }
    }

    /// The definition of a keyspace, if it exists (committed).
    pub fn keyspace(&self, id: KeyspaceId) -> Option<Arc<KeyspaceDef>> {
        self.inner.registry.read().ok()?.get(&id).cloned()
    }

    /// Every committed user keyspace.
    pub fn keyspaces(&self) -> Vec<Arc<KeyspaceDef>> {
        let mut defs: Vec<_> = self
            .inner
            .registry
            .read()
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default();
        defs.sort_by_key(|d| d.id);
        defs
    }

    /// The range partitions of a keyspace, in key order.
    pub fn range_partitions(&self, keyspace: KeyspaceId) -> Vec<RangePartition> {
        lock(&self.inner.ranges).list(keyspace)
    }

    /// Bytes a keyspace occupies on disk (see `Engine::disk_space`).
    pub fn disk_space(&self, keyspace: KeyspaceId) -> u64 {
        self.inner.engine.disk_space(keyspace)
    }

    pub fn options(&self) -> &StoreOptions {
        &self.inner.options
    }

    /// Whether an earlier write failure made the store refuse writes.
    pub fn is_poisoned(&self) -> bool {
        self.inner.poisoned.load(Ordering::Acquire)
    }
}

/// Splits a transaction-written value into its stamp and payload.
pub(crate) fn strip_stamp(value: &[u8]) -> Result<&[u8]> {
    value
        .get(STAMP_BYTES..)
        .ok_or_else(|| Error::Corrupt("value shorter than its commit stamp".into()))
}

/// A row as read: its key, its payload, and the stamp of the commit that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: Bytes,
    pub value: Bytes,
    /// Commit time in microseconds since the Unix epoch; 0 if written by the reading
    /// transaction itself and not yet committed.
    pub commit_ts: u64,
    /// Commit sequence number (the row's version); 0 if not yet committed.
    pub version: u64,
}

/// A row as read, borrowed from the batch a scan read it in: see [`Rows::next_ref`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowRef<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    /// As [`Row::commit_ts`].
    pub commit_ts: u64,
    /// As [`Row::version`].
    pub version: u64,
}

/// A stored value's commit stamp: (commit time, version).
#[inline]
fn stamp(stored: &[u8]) -> Result<(u64, u64)> {
    match (stored.get(..8), stored.get(8..STAMP_BYTES)) {
        (Some(ts), Some(version)) => Ok((
            u64::from_be_bytes(ts.try_into().map_err(|_| Error::Corrupt("stamp".into()))?),
            u64::from_be_bytes(
                version
                    .try_into()
                    .map_err(|_| Error::Corrupt("stamp".into()))?,
            ),
        )),
        _ => Err(Error::Corrupt("value shorter than its commit stamp".into())),
    }
}

impl Row {
    #[inline]
    pub(crate) fn from_stored(key: Bytes, mut stored: Bytes) -> Result<Row> {
        let (commit_ts, version) = stamp(&stored)?;
        // Moving the start in place, unlike slicing, leaves the reference count alone.
        stored.advance(STAMP_BYTES);
        Ok(Row {
            key,
            value: stored,
            commit_ts,
            version,
        })
    }

    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef {
            key: &self.key,
            value: &self.value,
            commit_ts: self.commit_ts,
            version: self.version,
        }
    }
}

/// A streaming scan over rows.
pub type RowIter = Box<dyn Iterator<Item = Result<Row>> + Send>;

/// The rows of a snapshot scan, in the scan's order.
pub struct Rows(EngineIter);

impl Rows {
    /// The next row, borrowed from the batch the scan read it in: decoding it on the spot
    /// costs no reference counting.
    #[inline]
    pub fn next_ref(&mut self) -> Option<Result<RowRef<'_>>> {
        Some(self.0.next_entry()?.and_then(|(key, stored)| {
            let (commit_ts, version) = stamp(stored)?;
            Ok(RowRef {
                key,
                value: &stored[STAMP_BYTES..],
                commit_ts,
                version,
            })
        }))
    }
}

impl Iterator for Rows {
    type Item = Result<Row>;

    #[inline]
    fn next(&mut self) -> Option<Result<Row>> {
        Some(
            self.0
                .next()?
                .and_then(|(key, value)| Row::from_stored(key, value)),
        )
    }
}

/// Reads from one consistent snapshot, without conflict tracking: for autocommit queries.
#[derive(Clone)]
pub struct ReadView {
    pub(crate) snapshot: Arc<dyn EngineSnapshot>,
}

impl ReadView {
    pub fn get(&self, keyspace: KeyspaceId, key: &[u8]) -> Result<Option<Row>> {
        match self.snapshot.get(keyspace, key)? {
            Some(stored) => Ok(Some(Row::from_stored(Bytes::copy_from_slice(key), stored)?)),
            None => Ok(None),
        }
    }

    pub fn get_many(&self, keyspace: KeyspaceId, keys: &[Bytes]) -> Result<Vec<Option<Row>>> {
        keys.iter().map(|k| self.get(keyspace, k)).collect()
    }

    pub fn scan(
        &self,
        keyspace: KeyspaceId,
        range: &KeyRange,
        direction: Direction,
    ) -> Result<Rows> {
        Ok(Rows(self.snapshot.scan(keyspace, range, direction)?))
    }
}

impl StoreInner {
    pub(crate) fn allocate_keyspace_id(&self) -> KeyspaceId {
        self.next_keyspace_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn keyspace_exists(&self, id: KeyspaceId) -> bool {
        id < FIRST_USER_KEYSPACE
            || self
                .registry
                .read()
                .map(|r| r.contains_key(&id))
                .unwrap_or(false)
    }

    pub(crate) fn end_transaction(&self, start_seq: u64) {
        let mut occ = lock(&self.occ);
        if let Some(count) = occ.active.get_mut(&start_seq) {
            *count -= 1;
            if *count == 0 {
                occ.active.remove(&start_seq);
            }
        }
        prune_recent(&mut occ);
    }

    /// Queues a commit and returns when it is durable (or refused).
    pub(crate) fn commit(&self, pending: Arc<PendingCommit>) -> Result<CommitInfo> {
        let mut queue = lock(&self.queue);
        queue.pending.push(Arc::clone(&pending));
        loop {
            if let Some(result) = pending.take_result() {
                return result;
            }
            if !queue.leader_active {
                queue.leader_active = true;
                let group = std::mem::take(&mut queue.pending);
                drop(queue);
                // Leading must not unwind past `leader_active = true`, or every later commit
                // would wait forever.
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.lead(&group)));
                if outcome.is_err() {
                    self.poisoned.store(true, Ordering::Release);
                    for p in &group {
                        p.set_result(Err(Error::Internal("commit leader panicked".into())));
                    }
                }
                queue = lock(&self.queue);
                queue.leader_active = false;
                self.queue_cv.notify_all();
                continue;
            }
            queue = self.queue_cv.wait(queue).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Validates, stamps and durably writes one group of commits.
    fn lead(&self, group: &[Arc<PendingCommit>]) {
        if self.poisoned.load(Ordering::Acquire) {
            for p in group {
                p.set_result(Err(Error::Poisoned));
            }
            return;
        }

        // 1. Validate and stamp, in queue order.
        let mut accepted: Vec<(&Arc<PendingCommit>, CommitInfo)> = Vec::with_capacity(group.len());
        {
            let mut occ = lock(&self.occ);
            for p in group {
                if let Err(e) = self.validate(&occ, p) {
                    p.set_result(Err(e));
                    continue;
                }
                occ.assigned_seq += 1;
                let seq = occ.assigned_seq;
                let ts = now_micros().max(occ.last_ts + 1);
                occ.last_ts = ts;
                for (key, _) in p.writes.iter() {
                    occ.recent.insert(key.clone(), seq);
                }
                accepted.push((
                    p,
                    CommitInfo {
                        seq,
                        timestamp_micros: ts,
                    },
                ));
            }
        }
        if accepted.is_empty() {
            return;
        }

        // 2. One batch: data, keyspace definitions, range counts, counters.
        let mut ops = Vec::new();
        let mut touched: HashSet<(KeyspaceId, Bytes)> = HashSet::new();
        let mut ranges = lock(&self.ranges);
        for (p, info) in &accepted {
            let stamp = stamp_bytes(*info);
            for ((keyspace, key), write) in p.writes.iter() {
                let (keyspace, key) = (*keyspace, key.clone());
                let (rows_delta, bytes_delta) = match &write.value {
                    Some(payload) => {
                        let mut stored = Vec::with_capacity(STAMP_BYTES + payload.len());
                        stored.extend_from_slice(&stamp);
                        stored.extend_from_slice(payload);
                        let new_size = (key.len() + stored.len()) as i64;
                        let delta = match write.old_size {
                            Some(old) => (0, new_size - old as i64),
                            None => (1, new_size),
                        };
                        ops.push(EngineOp::Put {
                            keyspace,
                            key: key.clone(),
                            value: Bytes::from(stored),
                        });
                        delta
                    }
                    None => {
                        ops.push(EngineOp::Delete {
                            keyspace,
                            key: key.clone(),
                        });
                        match write.old_size {
                            Some(old) => (-1, -(old as i64)),
                            None => (0, 0),
                        }
                    }
                };
                if keyspace >= FIRST_USER_KEYSPACE && (rows_delta, bytes_delta) != (0, 0) {
                    let start = ranges.apply_delta(keyspace, &key, rows_delta, bytes_delta);
                    touched.insert((keyspace, start));
                }
            }
        }
        for (keyspace, start) in &touched {
            if let Some(stats) = ranges.stats(*keyspace, start) {
                ops.push(EngineOp::Put {
                    keyspace: SYSTEM_KEYSPACE,
                    key: ranges::record_key(*keyspace, start),
                    value: ranges::record_value(stats),
                });
            }
        }
        let last = accepted
            .last()
            .map(|(_, info)| *info)
            .unwrap_or(CommitInfo {
                seq: 0,
                timestamp_micros: 0,
            });
        let mut counters = Vec::with_capacity(16);
        counters.extend_from_slice(&last.seq.to_le_bytes());
        counters.extend_from_slice(&last.timestamp_micros.to_le_bytes());
        ops.push(EngineOp::Put {
            keyspace: SYSTEM_KEYSPACE,
            key: Bytes::from_static(COUNTERS_KEY),
            value: Bytes::from(counters),
        });

        // 3. Durable write; nothing is visible or acknowledged before it returns.
        if let Err(e) = self.engine.write(ops, true) {
            self.poisoned.store(true, Ordering::Release);
            let message = e.to_string();
            for (p, _) in &accepted {
                p.set_result(Err(match &e {
                    Error::Poisoned => Error::Poisoned,
                    _ => Error::Engine(message.clone()),
                }));
            }
            return;
        }
        {
            let mut occ = lock(&self.occ);
            occ.visible_seq = last.seq;
            prune_recent(&mut occ);
        }

        // 4. Keyspace creations and drops take effect in memory now that they are durable.
        let mut dropped = Vec::new();
        {
            let mut registry = self.registry.write().unwrap_or_else(|e| e.into_inner());
            for (p, _) in &accepted {
                for def in &p.created {
                    registry.insert(def.id, Arc::new(def.clone()));
                }
                for id in &p.dropped {
                    registry.remove(id);
                    dropped.push(*id);
                }
            }
        }
        for (p, info) in &accepted {
            p.set_result(Ok(*info));
        }
        if !dropped.is_empty() {
            let mut ops = Vec::new();
            for id in &dropped {
                for start in ranges.remove_keyspace(*id) {
                    ops.push(EngineOp::Delete {
                        keyspace: SYSTEM_KEYSPACE,
                        key: ranges::record_key(*id, &start),
                    });
                }
            }
            // Failures here leave orphans that the next open removes.
            let _ = self.engine.write(ops, false);
            for id in dropped {
                let _ = self.engine.drop_keyspace(id);
            }
        }

        // 5. Split range partitions that grew past the limit. Still the leader, so no commit
        // changes the counts while we count.
        for (keyspace, start) in touched {
            let Some(stats) = ranges.stats(keyspace, &start) else {
                continue;
            };
            if ranges.should_try_split(keyspace, &start, stats.bytes, self.options.split_bytes_max)
                && let Err(Error::Poisoned) = self.split(&mut ranges, keyspace, start, stats)
            {
                self.poisoned.store(true, Ordering::Release);
            }
        }
    }

    fn validate(&self, occ: &OccState, p: &PendingCommit) -> Result<()> {
        let changed_after = |keyspace: KeyspaceId, key: &Bytes| {
            occ.recent
                .get(&(keyspace, key.clone()))
                .is_some_and(|&seq| seq > p.start_seq)
        };
        for (keyspace, key) in &p.read_points {
            if changed_after(*keyspace, key) {
                return Err(Error::Conflict);
            }
        }
        for ((keyspace, key), _) in p.writes.iter() {
            if !self.keyspace_exists(*keyspace) && !p.created.iter().any(|d| d.id == *keyspace) {
                return Err(Error::UnknownKeyspace { id: *keyspace });
            }
            if changed_after(*keyspace, key) {
                return Err(Error::Conflict);
            }
        }
        for (keyspace, range) in &p.read_ranges {
            let lower = match &range.lower {
                Bound::Included(k) => Bound::Included((*keyspace, k.clone())),
                Bound::Excluded(k) => Bound::Excluded((*keyspace, k.clone())),
                Bound::Unbounded => Bound::Included((*keyspace, Bytes::new())),
            };
            let upper = match &range.upper {
                Bound::Included(k) => Bound::Included((*keyspace, k.clone())),
                Bound::Excluded(k) => Bound::Excluded((*keyspace, k.clone())),
                Bound::Unbounded => match keyspace.checked_add(1) {
                    Some(next) => Bound::Excluded((next, Bytes::new())),
                    None => Bound::Unbounded,
                },
            };
            if range.is_empty() {
                continue;
            }
            if occ
                .recent
                .range((lower, upper))
                .any(|(_, &seq)| seq > p.start_seq)
            {
                return Err(Error::Conflict);
            }
        }
        Ok(())
    }

    fn split(
        &self,
        ranges: &mut RangeMap,
        keyspace: KeyspaceId,
        start: Bytes,
        stats: RangeStats,
    ) -> Result<()> {
        let Some(def) = self
            .registry
            .read()
            .ok()
            .and_then(|r| r.get(&keyspace).cloned())
        else {
            return Ok(());
        };
        let end = ranges.end_of(keyspace, &start);
        let range = KeyRange {
            lower: if start.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Included(start.clone())
            },
            upper: end.map_or(Bound::Unbounded, Bound::Excluded),
        };
        let snapshot = self.engine.snapshot();
        let rows = snapshot
            .scan(keyspace, &range, Direction::Forward)?
            .map(|item| {
                item.map(|(k, v)| {
                    let size = k.len() + v.len();
                    (k, size)
                })
            });
        match ranges::choose_split(rows, stats.bytes / 2, |key| {
            def.layout.partition_prefix_len(key)
        })? {
            Some((boundary, left, right)) if boundary > start => {
                let (left_stats, right_stats) =
                    ranges.split(keyspace, &start, boundary.clone(), left, right);
                self.engine.write(
                    vec![
                        EngineOp::Put {
                            keyspace: SYSTEM_KEYSPACE,
                            key: ranges::record_key(keyspace, &start),
                            value: ranges::record_value(left_stats),
                        },
                        EngineOp::Put {
                            keyspace: SYSTEM_KEYSPACE,
                            key: ranges::record_key(keyspace, &boundary),
                            value: ranges::record_value(right_stats),
                        },
                    ],
                    false,
                )?;
            }
            _ => ranges.defer_split(keyspace, start, stats.bytes),
        }
        Ok(())
    }
}

fn stamp_bytes(info: CommitInfo) -> [u8; STAMP_BYTES] {
    let mut stamp = [0u8; STAMP_BYTES];
    stamp[..8].copy_from_slice(&info.timestamp_micros.to_be_bytes());
    stamp[8..].copy_from_slice(&info.seq.to_be_bytes());
    stamp
}

fn prune_recent(occ: &mut OccState) {
    // No active transaction started at or before `horizon` can conflict with commits at or
    // below it. Prune only when the map has grown, to keep this off the common path.
    if occ.recent.len() < 4096 {
        return;
    }
    let horizon = occ.active.keys().next().copied().unwrap_or(occ.visible_seq);
    occ.recent.retain(|_, seq| *seq > horizon);
}

/// Writes buffered by a transaction, in key order per keyspace.
pub(crate) type WriteSet = BTreeMap<(KeyspaceId, Bytes), Write>;
