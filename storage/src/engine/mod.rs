//! The narrow interface between Partita's storage logic and an ordered key-value engine.
//!
//! Everything above this trait — key encoding, transactions and conflict detection, group
//! commit, range partitions, the catalog — is ours and engine-independent. An engine only
//! stores byte keys in numbered keyspaces, reads them from consistent snapshots, and applies
//! batches atomically and durably. `FjallEngine` is the embedded default; an object-storage
//! engine can implement the same trait later without touching `sql` or `planner`.

mod fjall_engine;
mod fjall_scan;

pub use fjall_engine::FjallEngine;

use crate::error::Result;
use bytes::Bytes;
use std::ops::Bound;
use std::sync::Arc;

/// Identifies a keyspace (a table, index table, view or system keyspace).
pub type KeyspaceId = u32;

/// A half-open or closed range of encoded keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub lower: Bound<Bytes>,
    pub upper: Bound<Bytes>,
}

impl KeyRange {
    pub fn all() -> KeyRange {
        KeyRange {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// Every key starting with `prefix`.
    pub fn prefix(prefix: &[u8]) -> KeyRange {
        KeyRange {
            lower: Bound::Included(Bytes::copy_from_slice(prefix)),
            upper: match crate::keycodec::prefix_successor(prefix) {
                Some(succ) => Bound::Excluded(Bytes::from(succ)),
                None => Bound::Unbounded,
            },
        }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        let above = match &self.lower {
            Bound::Unbounded => true,
            Bound::Included(l) => key >= l.as_ref(),
            Bound::Excluded(l) => key > l.as_ref(),
        };
        let below = match &self.upper {
            Bound::Unbounded => true,
            Bound::Included(u) => key <= u.as_ref(),
            Bound::Excluded(u) => key < u.as_ref(),
        };
        above && below
    }

    /// Whether no key can lie in the range.
    pub fn is_empty(&self) -> bool {
        match (&self.lower, &self.upper) {
            (Bound::Included(l), Bound::Included(u)) => l > u,
            (Bound::Included(l), Bound::Excluded(u))
            | (Bound::Excluded(l), Bound::Included(u))
            | (Bound::Excluded(l), Bound::Excluded(u)) => l >= u,
            _ => false,
        }
    }
}

/// Scan direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// One write of a batch.
#[derive(Debug, Clone)]
pub enum EngineOp {
    Put {
        keyspace: KeyspaceId,
        key: Bytes,
        value: Bytes,
    },
    Delete {
        keyspace: KeyspaceId,
        key: Bytes,
    },
}

/// The most entries [`EngineIter`] asks one [`EngineScan::next_batch`] call for.
pub const SCAN_BATCH: usize = 256;

/// What [`EngineIter`] asks for first, doubling up to [`SCAN_BATCH`]: a scan that stops
/// after a row or two (`LIMIT 1`, the newest entry of a partition) reads a few entries
/// past them, not a whole batch.
const FIRST_BATCH: usize = 16;

/// An engine's scan, read a batch at a time: one dynamic call per batch rather than per
/// entry (a scan of a million rows pays for the call, and for moving each entry through it,
/// a few thousand times instead of a million), and the natural unit for a backend whose
/// reads cross a network.
pub trait EngineScan: Send {
    /// Appends up to `max` (at least 1) next entries to `out`; appends none once the scan
    /// has ended.
    fn next_batch(&mut self, out: &mut Vec<(Bytes, Bytes)>, max: usize) -> Result<()>;
}

/// Any iterator of entries is a scan, a batch at a time.
struct IterScan<I>(I);

impl<I> EngineScan for IterScan<I>
where
    I: Iterator<Item = Result<(Bytes, Bytes)>> + Send,
{
    fn next_batch(&mut self, out: &mut Vec<(Bytes, Bytes)>, max: usize) -> Result<()> {
        for item in self.0.by_ref().take(max) {
            out.push(item?);
        }
        Ok(())
    }
}

/// A streaming iterator over key-value pairs in key order (or reverse), over an engine's
/// batched scan.
pub struct EngineIter {
    scan: Box<dyn EngineScan>,
    batch: std::vec::IntoIter<(Bytes, Bytes)>,
    /// How many entries the next batch asks for.
    next_size: usize,
    ended: bool,
}

impl EngineIter {
    pub fn new(scan: Box<dyn EngineScan>) -> EngineIter {
        EngineIter {
            scan,
            batch: Vec::new().into_iter(),
            next_size: FIRST_BATCH,
            ended: false,
        }
    }

    /// A scan over the entries an iterator yields.
    pub fn from_entries<I>(iter: I) -> EngineIter
    where
        I: Iterator<Item = Result<(Bytes, Bytes)>> + Send + 'static,
    {
        EngineIter::new(Box::new(IterScan(iter)))
    }

    #[cold]
    fn refill(&mut self) -> Result<()> {
        let mut batch = Vec::with_capacity(self.next_size);
        // After an error the scan ends there: entries read before it in the same batch are
        // dropped with it.
        let read = self.scan.next_batch(&mut batch, self.next_size);
        self.next_size = (self.next_size * 2).min(SCAN_BATCH);
        self.ended = batch.is_empty() || read.is_err();
        if read.is_ok() {
            self.batch = batch.into_iter();
        }
        read
    }
}

impl Iterator for EngineIter {
    type Item = Result<(Bytes, Bytes)>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.batch.next() {
                return Some(Ok(entry));
            }
            if self.ended {
                return None;
            }
            if let Err(e) = self.refill() {
                return Some(Err(e));
            }
        }
    }
}

pub trait Engine: Send + Sync + 'static {
    /// Creates the keyspace if it does not exist; idempotent.
    fn create_keyspace(&self, id: KeyspaceId) -> Result<()>;

    /// Removes a keyspace and all its data.
    fn drop_keyspace(&self, id: KeyspaceId) -> Result<()>;

    /// The keyspaces that exist.
    fn keyspaces(&self) -> Result<Vec<KeyspaceId>>;

    /// A consistent, point-in-time view across all keyspaces.
    fn snapshot(&self) -> Arc<dyn EngineSnapshot>;

    /// Applies `ops` atomically. When `durable`, the batch is on stable storage before this
    /// returns Ok, and it becomes visible to snapshots only after that. After an error the
    /// engine refuses further writes.
    fn write(&self, ops: Vec<EngineOp>, durable: bool) -> Result<()>;

    /// Bytes the keyspace occupies on stable storage, as far as the engine knows it cheaply;
    /// 0 for an unknown keyspace.
    fn disk_space(&self, id: KeyspaceId) -> u64;
}

pub trait EngineSnapshot: Send + Sync {
    fn get(&self, keyspace: KeyspaceId, key: &[u8]) -> Result<Option<Bytes>>;

    fn scan(
        &self,
        keyspace: KeyspaceId,
        range: &KeyRange,
        direction: Direction,
    ) -> Result<EngineIter>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::Mutex;

    /// Entries `0..len`, recording the size of each batch asked for; fails at `fail_at`.
    struct Counted {
        next: u32,
        len: u32,
        fail_at: Option<u32>,
        asked: Arc<Mutex<Vec<usize>>>,
    }

    impl EngineScan for Counted {
        fn next_batch(&mut self, out: &mut Vec<(Bytes, Bytes)>, max: usize) -> Result<()> {
            self.asked.lock().unwrap().push(max);
            for _ in 0..max {
                if self.fail_at == Some(self.next) {
                    return Err(Error::Engine("read failed".into()));
                }
                if self.next == self.len {
                    break;
                }
                let key = Bytes::copy_from_slice(&self.next.to_be_bytes());
                out.push((key.clone(), key));
                self.next += 1;
            }
            Ok(())
        }
    }

    fn counted(len: u32, fail_at: Option<u32>) -> (EngineIter, Arc<Mutex<Vec<usize>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let scan = Counted {
            next: 0,
            len,
            fail_at,
            asked: Arc::clone(&asked),
        };
        (EngineIter::new(Box::new(scan)), asked)
    }

    #[test]
    fn batches_start_small_and_double() {
        let (mut iter, asked) = counted(1000, None);
        assert!(iter.next().is_some());
        assert_eq!(*asked.lock().unwrap(), vec![FIRST_BATCH]);

        let (iter, asked) = counted(1000, None);
        let keys: Vec<u32> = iter
            .map(|e| u32::from_be_bytes(e.unwrap().0.as_ref().try_into().unwrap()))
            .collect();
        assert_eq!(keys, (0..1000).collect::<Vec<_>>());
        assert_eq!(
            *asked.lock().unwrap(),
            vec![16, 32, 64, 128, 256, 256, 256, 256]
        );
    }

    #[test]
    fn an_error_ends_the_scan_after_the_entries_before_its_batch() {
        let (iter, _) = counted(1000, Some(20));
        let items: Vec<Result<(Bytes, Bytes)>> = iter.collect();
        // The first batch (16 entries) arrived whole; the second failed at entry 20.
        assert_eq!(items.len(), FIRST_BATCH + 1);
        assert!(items[..FIRST_BATCH].iter().all(|r| r.is_ok()));
        assert!(items[FIRST_BATCH].is_err());
    }
}
