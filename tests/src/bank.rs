//! The bank-transfer workload of the storage crash test, shared by the writer child process
//! and the checking parent.
//!
//! Accounts 0..ACCOUNTS start with INITIAL each. Transfer N moves an amount from one account to
//! another and records (from, to, amount) under key N in the ledger keyspace, all in one
//! transaction. Consistency: every account's balance equals INITIAL plus the ledger's net
//! transfers into it; so a transaction partly present shows up as a mismatch.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use storage::{
    Direction, KeyColumn, KeyLayout, KeyRange, KeyspaceId, KeyspaceKind, ScalarType, Store,
    StoreOptions, Value,
};

pub const ACCOUNTS: i64 = 10;
pub const INITIAL: i64 = 1000;

/// A small deterministic generator (splitmix64) so the child needs no seeding dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

#[derive(Clone)]
pub struct Bank {
    pub store: Store,
    accounts: KeyspaceId,
    ledger: KeyspaceId,
}

fn layout() -> KeyLayout {
    KeyLayout::new(vec![KeyColumn::asc(ScalarType::Int8)], vec![], 0).expect("valid layout")
}

fn key(n: i64) -> Vec<u8> {
    layout().encode(&[Value::Int8(n)], &[]).expect("int key")
}

fn int_payload(values: &[i64]) -> Vec<u8> {
    storage::rowcodec::encode_row(
        1,
        &values.iter().map(|v| Value::Int8(*v)).collect::<Vec<_>>(),
    )
}

fn ints(payload: &[u8]) -> storage::Result<Vec<i64>> {
    let (_, values) = storage::rowcodec::decode_row(payload)?;
    values
        .into_iter()
        .map(|v| match v {
            Value::Int8(i) => Ok(i),
            other => Err(storage::Error::Corrupt(format!(
                "expected int8, got {other:?}"
            ))),
        })
        .collect()
}

impl Bank {
    /// Opens the store, creating the keyspaces and funding the accounts on first use.
    pub fn open(dir: &Path) -> storage::Result<Bank> {
        let store = Store::open(
            dir,
            StoreOptions {
                split_bytes_max: 16 << 10,
                cache_bytes: 16 << 20,
            },
        )?;
        let find = |name: &str| {
            store
                .keyspaces()
                .iter()
                .find(|d| d.name == name)
                .map(|d| d.id)
        };
        let (accounts, ledger) = match (find("accounts"), find("ledger")) {
            (Some(a), Some(l)) => (a, l),
            _ => {
                let mut txn = store.begin();
                let accounts = txn.create_keyspace(KeyspaceKind::Table, "accounts", layout())?;
                let ledger = txn.create_keyspace(KeyspaceKind::Index, "ledger", layout())?;
                for a in 0..ACCOUNTS {
                    txn.put(accounts, &key(a), int_payload(&[INITIAL]))?;
                }
                txn.commit()?;
                (accounts, ledger)
            }
        };
        Ok(Bank {
            store,
            accounts,
            ledger,
        })
    }

    pub fn next_transfer_number(&self) -> storage::Result<u64> {
        let last = self
            .store
            .snapshot()
            .scan(self.ledger, &KeyRange::all(), Direction::Reverse)?
            .next()
            .transpose()?;
        Ok(match last {
            Some(row) => match layout().decode(&row.key)?.0.first() {
                Some(Value::Int8(n)) => *n as u64 + 1,
                _ => 1,
            },
            None => 1,
        })
    }

    pub fn transfer(&self, n: u64, rng: &mut Rng) -> storage::Result<()> {
        let from = rng.below(ACCOUNTS as u64) as i64;
        let to = (from + 1 + rng.below(ACCOUNTS as u64 - 1) as i64) % ACCOUNTS;
        let amount = 1 + rng.below(50) as i64;
        let mut txn = self.store.begin();
        let balance = |txn: &mut storage::Transaction, a: i64| -> storage::Result<i64> {
            let row = txn
                .get(self.accounts, &key(a))?
                .ok_or_else(|| storage::Error::Corrupt(format!("account {a} missing")))?;
            Ok(ints(&row.value)?[0])
        };
        let (fb, tb) = (balance(&mut txn, from)?, balance(&mut txn, to)?);
        txn.put(self.accounts, &key(from), int_payload(&[fb - amount]))?;
        txn.put(self.accounts, &key(to), int_payload(&[tb + amount]))?;
        txn.put(
            self.ledger,
            &key(n as i64),
            int_payload(&[from, to, amount]),
        )?;
        txn.commit().map(|_| ())
    }

    /// Checks consistency; returns the transfer numbers present in the ledger.
    pub fn check(&self) -> Result<BTreeSet<u64>, String> {
        let view = self.store.snapshot();
        let mut expected: BTreeMap<i64, i64> = (0..ACCOUNTS).map(|a| (a, INITIAL)).collect();
        let mut present = BTreeSet::new();
        for row in view
            .scan(self.ledger, &KeyRange::all(), Direction::Forward)
            .map_err(|e| e.to_string())?
        {
            let row = row.map_err(|e| e.to_string())?;
            let n = match layout().decode(&row.key).map_err(|e| e.to_string())?.0[0] {
                Value::Int8(n) => n as u64,
                _ => return Err("bad ledger key".into()),
            };
            let t = ints(&row.value).map_err(|e| e.to_string())?;
            *expected.entry(t[0]).or_default() -= t[2];
            *expected.entry(t[1]).or_default() += t[2];
            present.insert(n);
        }
        for (a, want) in expected {
            let row = view
                .get(self.accounts, &key(a))
                .map_err(|e| e.to_string())?
                .ok_or(format!("account {a} missing"))?;
            let got = ints(&row.value).map_err(|e| e.to_string())?[0];
            if got != want {
                return Err(format!(
                    "account {a}: balance {got}, ledger says {want}: a transaction is partly present"
                ));
            }
        }
        Ok(present)
    }
}
