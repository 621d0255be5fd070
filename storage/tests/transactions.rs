//! Optimistic concurrency, group commit, system stamps and refusal after a failed write.

use bytes::Bytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use storage::engine::{Engine, EngineOp, EngineSnapshot, FjallEngine, KeyspaceId};
use storage::{
    Direction, Error, KeyColumn, KeyLayout, KeyRange, KeyspaceKind, ScalarType, Store,
    StoreOptions, Value,
};

fn layout() -> KeyLayout {
    KeyLayout::new(vec![KeyColumn::asc(ScalarType::Int8)], vec![], 0).unwrap()
}

fn key(k: i64) -> Vec<u8> {
    layout().encode(&[Value::Int8(k)], &[]).unwrap()
}

fn setup(store: &Store) -> KeyspaceId {
    let mut txn = store.begin();
    let ks = txn
        .create_keyspace(KeyspaceKind::Table, "t", layout())
        .unwrap();
    txn.commit().unwrap();
    ks
}

#[test]
fn concurrent_writers_of_one_key_exactly_one_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let ks = setup(&store);
    for round in 0..20 {
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let (store, barrier) = (store.clone(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let mut txn = store.begin();
                    txn.put(ks, &key(round), vec![t]).unwrap();
                    barrier.wait();
                    txn.commit()
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let ok = results.iter().filter(|r| r.is_ok()).count();
        let conflicts = results
            .iter()
            .filter(|r| matches!(r, Err(Error::Conflict)))
            .count();
        assert_eq!((ok, conflicts), (1, 1), "round {round}: {results:?}");
    }
}

#[test]
fn read_then_concurrent_write_conflicts_and_disjoint_writes_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let ks = setup(&store);

    // Write skew is prevented: each reads the other's key, writes its own.
    let mut a = store.begin();
    let mut b = store.begin();
    assert!(a.get(ks, &key(2)).unwrap().is_none());
    assert!(b.get(ks, &key(1)).unwrap().is_none());
    a.put(ks, &key(1), vec![1]).unwrap();
    b.put(ks, &key(2), vec![2]).unwrap();
    a.commit().unwrap();
    assert!(matches!(b.commit(), Err(Error::Conflict)));

    // A range read conflicts with an insert into the range (phantoms).
    let mut a = store.begin();
    let mut b = store.begin();
    let _ = a
        .scan(ks, &KeyRange::all(), Direction::Forward)
        .unwrap()
        .count();
    a.put(ks, &key(100), vec![0]).unwrap();
    b.put(ks, &key(50), vec![0]).unwrap();
    b.commit().unwrap();
    assert!(matches!(a.commit(), Err(Error::Conflict)));

    // Blind writes to different keys both commit.
    let mut a = store.begin();
    let mut b = store.begin();
    a.put(ks, &key(7), vec![7]).unwrap();
    b.put(ks, &key(8), vec![8]).unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
}

#[test]
fn rows_carry_commit_stamps() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let ks = setup(&store);
    let mut txn = store.begin();
    txn.put(ks, &key(1), b"x".to_vec()).unwrap();
    let own = txn.get(ks, &key(1)).unwrap().unwrap();
    assert_eq!((own.commit_ts, own.version), (0, 0));
    let first = txn.commit().unwrap();
    let mut txn = store.begin();
    txn.put(ks, &key(1), b"y".to_vec()).unwrap();
    let second = txn.commit().unwrap();
    assert!(second.seq > first.seq && second.timestamp_micros > first.timestamp_micros);
    let row = store.snapshot().get(ks, &key(1)).unwrap().unwrap();
    assert_eq!(
        (row.version, row.commit_ts, &row.value[..]),
        (second.seq, second.timestamp_micros, &b"y"[..])
    );

    // Stamps and counters survive a reopen: versions keep growing.
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let mut txn = store.begin();
    txn.put(ks, &key(2), b"z".to_vec()).unwrap();
    assert!(txn.commit().unwrap().seq > second.seq);
}

#[test]
fn many_threads_share_group_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let ks = setup(&store);
    let handles: Vec<_> = (0..8i64)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let mut txn = store.begin();
                    txn.put(ks, &key(t * 1000 + i), vec![1]).unwrap();
                    txn.commit().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(
        store
            .snapshot()
            .scan(ks, &KeyRange::all(), Direction::Forward)
            .unwrap()
            .count(),
        200
    );
    assert_eq!(
        store
            .range_partitions(ks)
            .iter()
            .map(|p| p.rows)
            .sum::<i64>(),
        200
    );
}

#[test]
fn dropped_keyspace_disappears_and_creation_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let ks = setup(&store);
    let mut txn = store.begin();
    txn.put(ks, &key(1), vec![1]).unwrap();
    txn.commit().unwrap();
    let mut txn = store.begin();
    let never = txn
        .create_keyspace(KeyspaceKind::Index, "never", layout())
        .unwrap();
    txn.rollback();
    assert!(store.keyspace(never).is_none());
    let mut txn = store.begin();
    txn.drop_keyspace(ks).unwrap();
    txn.commit().unwrap();
    assert!(store.keyspace(ks).is_none());
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    assert!(store.keyspaces().is_empty());
    let mut txn = store.begin();
    assert!(txn.put(ks, &key(1), vec![1]).is_err() || txn.commit().is_err());
}

/// Wraps the real engine and fails writes on demand, as a failed fsync would.
struct FailingEngine {
    inner: FjallEngine,
    fail: AtomicBool,
}

impl Engine for FailingEngine {
    fn create_keyspace(&self, id: KeyspaceId) -> storage::Result<()> {
        self.inner.create_keyspace(id)
    }
    fn drop_keyspace(&self, id: KeyspaceId) -> storage::Result<()> {
        self.inner.drop_keyspace(id)
    }
    fn keyspaces(&self) -> storage::Result<Vec<KeyspaceId>> {
        self.inner.keyspaces()
    }
    fn disk_space(&self, id: KeyspaceId) -> u64 {
        self.inner.disk_space(id)
    }
    fn snapshot(&self) -> Arc<dyn EngineSnapshot> {
        self.inner.snapshot()
    }
    fn write(&self, ops: Vec<EngineOp>, durable: bool) -> storage::Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(Error::Io(std::io::Error::other("fsync failed (injected)")));
        }
        self.inner.write(ops, durable)
    }
}

#[test]
fn failed_write_makes_the_store_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(FailingEngine {
        inner: FjallEngine::open(dir.path(), 4 << 20).unwrap(),
        fail: AtomicBool::new(false),
    });
    let store = Store::open_engine(engine.clone(), StoreOptions::default()).unwrap();
    let ks = setup(&store);
    engine.fail.store(true, Ordering::SeqCst);
    let mut txn = store.begin();
    txn.put(ks, &key(1), vec![1]).unwrap();
    assert!(txn.commit().is_err());
    engine.fail.store(false, Ordering::SeqCst);
    let mut txn = store.begin();
    txn.put(ks, &key(2), vec![2]).unwrap();
    assert!(matches!(txn.commit(), Err(Error::Poisoned)));
    assert!(store.is_poisoned());
    assert!(store.snapshot().get(ks, &key(1)).unwrap().is_none());
    let _ = Bytes::new();
}
