//! The embedded default engine: fjall 3, one fjall keyspace per Partita keyspace.
//!
//! Durable writes use a fjall write batch with `PersistMode::SyncAll`, which writes the journal,
//! fsyncs it, and only then applies the batch to memtables, so a snapshot never sees a write
//! that is not yet durable. fjall poisons itself after a failed fsync; we then refuse writes.

use super::fjall_scan::{VersionWatch, forward_scan};
use super::{Direction, Engine, EngineIter, EngineOp, EngineSnapshot, KeyRange, KeyspaceId};
use crate::error::{Error, Result};
use bytes::Bytes;
use fjall::config::{BlockSizePolicy, RestartIntervalPolicy};
use fjall::{AbstractTree, Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable};
use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// A keyspace and what the direct scan remembers about its table sets.
#[derive(Clone)]
struct Handle {
    keyspace: Keyspace,
    watch: Arc<VersionWatch>,
}

impl Handle {
    fn new(keyspace: Keyspace) -> Handle {
        Handle {
            keyspace,
            watch: Arc::default(),
        }
    }
}

type Keyspaces = Arc<RwLock<HashMap<KeyspaceId, Handle>>>;

pub struct FjallEngine {
    db: Database,
    keyspaces: Keyspaces,
    poisoned: AtomicBool,
}

const NAME_PREFIX: &str = "ks";

fn keyspace_name(id: KeyspaceId) -> String {
    format!("{NAME_PREFIX}{id}")
}

/// Options for a new keyspace. Every key in a data block is stored whole (a restart
/// interval of 1) rather than as a suffix of the one before: reading an entry then needs no
/// allocation to rebuild its key, and point reads binary-search every key. Blocks are 16 KiB
/// instead of 4, so a scan switches blocks a quarter as often. Measured on the benchmark's
/// 1M rows of ~65 bytes: a full table read 106 -> 85 ns per row, tables ~10% larger. fjall
/// stores these per keyspace, so keyspaces created before keep theirs.
fn keyspace_options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default()
        .data_block_restart_interval_policy(RestartIntervalPolicy::all(1))
        .data_block_size_policy(BlockSizePolicy::all(16 * 1024))
}

fn engine_err(e: fjall::Error) -> Error {
    match e {
        fjall::Error::Poisoned => Error::Poisoned,
        e => Error::Engine(e.to_string()),
    }
}

impl FjallEngine {
    pub fn open(path: &Path, cache_bytes: u64) -> Result<FjallEngine> {
        std::fs::create_dir_all(path)?;
        let db = Database::builder(path)
            .cache_size(cache_bytes)
            .open()
            .map_err(engine_err)?;
        let mut keyspaces = HashMap::new();
        for name in db.list_keyspace_names() {
            let name: &str = &name;
            if let Some(id) = name
                .strip_prefix(NAME_PREFIX)
                .and_then(|s| s.parse::<KeyspaceId>().ok())
            {
                let ks = db
                    .keyspace(name, KeyspaceCreateOptions::default)
                    .map_err(engine_err)?;
                keyspaces.insert(id, Handle::new(ks));
            }
        }
        Ok(FjallEngine {
            db,
            keyspaces: Arc::new(RwLock::new(keyspaces)),
            poisoned: AtomicBool::new(false),
        })
    }

    fn handle(&self, id: KeyspaceId) -> Result<Keyspace> {
        keyspace(&self.keyspaces, id)
    }
}

/// The keyspace `id`'s handle, or (with [`keyspace`]) only its keyspace: point reads and
/// writes take no reference to the direct scan's watch.
fn lookup(map: &RwLock<HashMap<KeyspaceId, Handle>>, id: KeyspaceId) -> Result<Handle> {
    with_handle(map, id, Handle::clone)
}

fn keyspace(map: &RwLock<HashMap<KeyspaceId, Handle>>, id: KeyspaceId) -> Result<Keyspace> {
    with_handle(map, id, |h| h.keyspace.clone())
}

fn with_handle<T>(
    map: &RwLock<HashMap<KeyspaceId, Handle>>,
    id: KeyspaceId,
    f: impl FnOnce(&Handle) -> T,
) -> Result<T> {
    map.read()
        .map_err(|_| Error::Internal("keyspace map lock poisoned".into()))?
        .get(&id)
        .map(f)
        .ok_or(Error::UnknownKeyspace { id })
}

impl Engine for FjallEngine {
    /// The keyspace's flushed tables and blob files, plus its active memtable, whose writes
    /// are on disk in the journal until a flush moves them into a table.
    fn disk_space(&self, id: KeyspaceId) -> u64 {
        self.handle(id)
            .map_or(0, |k| k.disk_space() + k.tree.active_memtable().size())
    }

    fn create_keyspace(&self, id: KeyspaceId) -> Result<()> {
        let mut map = self
            .keyspaces
            .write()
            .map_err(|_| Error::Internal("keyspace map lock poisoned".into()))?;
        if let std::collections::hash_map::Entry::Vacant(slot) = map.entry(id) {
            let ks = self
                .db
                .keyspace(&keyspace_name(id), keyspace_options)
                .map_err(engine_err)?;
            slot.insert(Handle::new(ks));
        }
        Ok(())
    }

    fn drop_keyspace(&self, id: KeyspaceId) -> Result<()> {
        let removed = self
            .keyspaces
            .write()
            .map_err(|_| Error::Internal("keyspace map lock poisoned".into()))?
            .remove(&id);
        if let Some(handle) = removed {
            self.db
                .delete_keyspace(handle.keyspace)
                .map_err(engine_err)?;
        }
        Ok(())
    }

    fn keyspaces(&self) -> Result<Vec<KeyspaceId>> {
        let map = self
            .keyspaces
            .read()
            .map_err(|_| Error::Internal("keyspace map lock poisoned".into()))?;
        let mut ids: Vec<_> = map.keys().copied().collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn snapshot(&self) -> Arc<dyn EngineSnapshot> {
        Arc::new(FjallSnapshot {
            snapshot: self.db.snapshot(),
            db: self.db.clone(),
            keyspaces: Arc::clone(&self.keyspaces),
        })
    }

    fn write(&self, ops: Vec<EngineOp>, durable: bool) -> Result<()> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Error::Poisoned);
        }
        let mut batch = self.db.batch();
        for op in ops {
            match op {
                EngineOp::Put {
                    keyspace,
                    key,
                    value,
                } => {
                    batch.insert(&self.handle(keyspace)?, key, value);
                }
                EngineOp::Delete { keyspace, key } => {
                    batch.remove(&self.handle(keyspace)?, key);
                }
            }
        }
        let batch = batch.durability(durable.then_some(PersistMode::SyncAll));
        batch.commit().map_err(|e| {
            self.poisoned.store(true, Ordering::Release);
            engine_err(e)
        })
    }
}

struct FjallSnapshot {
    snapshot: fjall::Snapshot,
    db: Database,
    /// The engine's live keyspace map: a keyspace created after the snapshot reads as empty
    /// at the snapshot's sequence number, which is what a transaction that created it needs.
    keyspaces: Keyspaces,
}

impl FjallSnapshot {
    fn handle(&self, id: KeyspaceId) -> Result<Keyspace> {
        keyspace(&self.keyspaces, id)
    }
}

fn to_fjall_bound(b: &Bound<Bytes>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl EngineSnapshot for FjallSnapshot {
    fn get(&self, keyspace: KeyspaceId, key: &[u8]) -> Result<Option<Bytes>> {
        let ks = self.handle(keyspace)?;
        Ok(self
            .snapshot
            .get(&ks, key)
            .map_err(engine_err)?
            .map(Bytes::from))
    }

    fn scan(
        &self,
        keyspace: KeyspaceId,
        range: &KeyRange,
        direction: Direction,
    ) -> Result<EngineIter> {
        let Handle {
            keyspace: ks,
            watch,
        } = lookup(&self.keyspaces, keyspace)?;
        if range.is_empty() {
            return Ok(EngineIter::from_entries(std::iter::empty()));
        }
        if direction == Direction::Forward
            && let Some(scan) = forward_scan(
                &self.snapshot,
                &ks,
                &watch,
                || self.db.visible_seqno(),
                range,
            )
        {
            return Ok(scan);
        }
        let bounds = (to_fjall_bound(&range.lower), to_fjall_bound(&range.upper));
        let iter = self.snapshot.range::<&[u8], _>(&ks, bounds);
        let map = |guard: fjall::Guard| -> Result<(Bytes, Bytes)> {
            let (k, v) = guard.into_inner().map_err(engine_err)?;
            Ok((Bytes::from(k), Bytes::from(v)))
        };
        Ok(match direction {
            Direction::Forward => EngineIter::from_entries(iter.map(map)),
            Direction::Reverse => EngineIter::from_entries(iter.rev().map(map)),
        })
    }
}
