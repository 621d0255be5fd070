//! LISTEN, UNLISTEN, NOTIFY and `pg_notify`: PostgreSQL's notifications between sessions, as
//! job queues (pg-boss, graphile-worker, Oban, River, good_job), cache invalidation and
//! PostgREST's schema reload use them.
//!
//! A database holds one [`Channels`]: for each channel, the sessions listening to it. Each
//! session has a [`Listener`], which keeps what its transaction asked for until the
//! transaction ends, as PostgreSQL does:
//!
//! - NOTIFY and `pg_notify` queue (channel, payload) pairs; a commit sends them, once each
//!   (a pair repeated in one transaction is sent once), in the order they were made, to every
//!   session listening to the channel then, the notifying session included; a rollback (or
//!   ROLLBACK TO SAVEPOINT made before them) drops them. Transactions that notify send in
//!   the order they commit.
//! - LISTEN and UNLISTEN take effect when their transaction commits.
//!
//! A session's notifications wait in its [`Queue`] until the wire layer delivers them:
//! before ReadyForQuery, or at once while the connection is idle outside a transaction
//! block. The queues are in memory, as PostgreSQL's is in its own files: a notification is
//! for the sessions connected when it is sent. What all queues hold together is bounded
//! ([`QUEUE_BYTES_MAX`]); a commit that would pass the bound fails with 54000, as
//! PostgreSQL's does when its queue is full.

use crate::error::Error;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// The longest channel name, in bytes: PostgreSQL's identifiers (NAMEDATALEN - 1).
pub const CHANNEL_MAX: usize = 63;

/// The longest payload, in bytes (PostgreSQL's limit is "less than 8000").
pub const PAYLOAD_MAX: usize = 7999;

/// What the sessions' queues may hold together, in bytes (see [`Notification::bytes`]).
pub const QUEUE_BYTES_MAX: usize = 1 << 30;

/// The channel an identifier names (LISTEN, UNLISTEN, NOTIFY): folded to lower case unless
/// quoted, and cut to 63 bytes as PostgreSQL cuts identifiers.
pub(crate) fn channel_name(ident: &datafusion::sql::sqlparser::ast::Ident) -> String {
    let mut name = sql::ddl::normalize_ident(ident);
    if name.len() > CHANNEL_MAX {
        let mut end = CHANNEL_MAX;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    name
}

/// One notification as a listening session receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The notifying session's process ID (its BackendKeyData).
    pub pid: i32,
    pub channel: String,
    /// Empty when the NOTIFY had none.
    pub payload: String,
}

impl Notification {
    /// What it takes of the queues' bound: its texts and a fixed overhead.
    fn bytes(channel: &str, payload: &str) -> usize {
        channel.len() + payload.len() + 32
    }
}

/// The notifications sent to one session, in the order they were sent.
#[derive(Debug)]
pub struct Queue {
    receiver: UnboundedReceiver<Notification>,
    channels: Arc<Channels>,
}

impl Queue {
    fn received(&self, n: Notification) -> Notification {
        let bytes = Notification::bytes(&n.channel, &n.payload);
        self.channels.queued.fetch_sub(bytes, Ordering::Relaxed);
        n
    }

    /// The next notification if one has arrived.
    pub fn try_next(&mut self) -> Option<Notification> {
        let n = self.receiver.try_recv().ok()?;
        Some(self.received(n))
    }

    /// Waits for the next notification.
    pub fn poll_next(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Notification>> {
        self.receiver
            .poll_recv(cx)
            .map(|n| n.map(|n| self.received(n)))
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.receiver.close();
        while self.try_next().is_some() {}
    }
}

/// One database's listening sessions, by channel.
#[derive(Debug)]
pub struct Channels {
    listeners: Mutex<HashMap<String, HashMap<u64, UnboundedSender<Notification>>>>,
    /// Held from a notifying transaction's commit to its sending, so that notifications
    /// of different transactions arrive in the order the transactions committed.
    order: tokio::sync::Mutex<()>,
    next_id: AtomicU64,
    /// The bytes the queues hold, and what they may hold.
    queued: AtomicUsize,
    bytes_max: usize,
}

impl Default for Channels {
    fn default() -> Channels {
        Channels::bounded(QUEUE_BYTES_MAX)
    }
}

impl Channels {
    /// Channels whose queues may hold `bytes_max` together.
    pub fn bounded(bytes_max: usize) -> Channels {
        Channels {
            listeners: Mutex::default(),
            order: tokio::sync::Mutex::default(),
            next_id: AtomicU64::default(),
            queued: AtomicUsize::default(),
            bytes_max,
        }
    }

    /// A new session's listener, listening to nothing.
    pub fn listener(self: &Arc<Self>) -> Listener {
        let (sender, receiver) = unbounded_channel();
        Listener {
            channels: Arc::clone(self),
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            pid: AtomicI32::new(std::process::id() as i32),
            sender,
            receiver: Mutex::new(Some(Queue {
                receiver,
                channels: Arc::clone(self),
            })),
            state: Mutex::default(),
        }
    }

    fn table(
        &self,
    ) -> MutexGuard<'_, HashMap<String, HashMap<u64, UnboundedSender<Notification>>>> {
        self.listeners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the notifying transactions committing before this one to send theirs.
    pub(crate) async fn commit_order(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.order.lock().await
    }
}

/// What a transaction asked of LISTEN and UNLISTEN, applied in order at its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    Listen(String),
    Unlisten(String),
    UnlistenAll,
}

/// A session's side: the channels it listens to and what its open transaction queued.
#[derive(Debug, Default)]
struct State {
    listening: BTreeSet<String>,
    actions: Vec<Action>,
    pending: Vec<(String, String)>,
}

/// Where a transaction's queue stood at a SAVEPOINT (see [`Listener::mark`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    actions: usize,
    pending: usize,
}

/// One session's listening and notifying (see the module comment).
#[derive(Debug)]
pub struct Listener {
    channels: Arc<Channels>,
    id: u64,
    pid: AtomicI32,
    sender: UnboundedSender<Notification>,
    receiver: Mutex<Option<Queue>>,
    state: Mutex<State>,
}

impl Listener {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The process ID the session's notifications carry (the wire layer's BackendKeyData).
    pub fn set_pid(&self, pid: i32) {
        self.pid.store(pid, Ordering::Relaxed);
    }

    pub fn pid(&self) -> i32 {
        self.pid.load(Ordering::Relaxed)
    }

    /// The queue the session's notifications arrive in, for the wire layer; `None` after
    /// the first call.
    pub fn take_queue(&self) -> Option<Queue> {
        self.receiver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// LISTEN `channel`, from the transaction's commit.
    pub(crate) fn listen(&self, channel: String) {
        self.state().actions.push(Action::Listen(channel));
    }

    /// UNLISTEN `channel`, or every channel when `None`, from the transaction's commit.
    pub(crate) fn unlisten(&self, channel: Option<String>) {
        self.state().actions.push(match channel {
            Some(channel) => Action::Unlisten(channel),
            None => Action::UnlistenAll,
        });
    }

    /// NOTIFY `channel`, `payload`, sent when the transaction commits. The channel must be
    /// 1 to 63 bytes and the payload under 8000, as in PostgreSQL (22023).
    pub(crate) fn notify(&self, channel: &str, payload: &str) -> Result<(), Error> {
        if channel.is_empty() {
            return Err(Error::InvalidParameterValue(
                "channel name cannot be empty".into(),
            ));
        }
        if channel.len() > CHANNEL_MAX {
            return Err(Error::InvalidParameterValue("channel name too long".into()));
        }
        if payload.len() > PAYLOAD_MAX {
            return Err(Error::InvalidParameterValue(
                "payload string too long".into(),
            ));
        }
        self.state()
            .pending
            .push((channel.to_string(), payload.to_string()));
        Ok(())
    }

    /// Whether the open transaction has notifications to send at its commit.
    pub(crate) fn notifying(&self) -> bool {
        !self.state().pending.is_empty()
    }

    /// Whether the queues have room for what the transaction would send (54000 if not),
    /// checked before it commits. Only a commit that notifies can be refused.
    pub(crate) fn check_room(&self) -> Result<(), Error> {
        let state = self.state();
        if state.pending.is_empty() {
            return Ok(());
        }
        let table = self.channels.table();
        let mut seen = HashSet::new();
        let mut bytes = 0usize;
        for (channel, payload) in &state.pending {
            if !seen.insert((channel, payload)) {
                continue;
            }
            let listeners = table.get(channel).map_or(0, HashMap::len);
            bytes = bytes.saturating_add(listeners * Notification::bytes(channel, payload));
        }
        let queued = self.channels.queued.load(Ordering::Relaxed);
        if queued.saturating_add(bytes) > self.channels.bytes_max {
            return Err(Error::ProgramLimit(
                "too many notifications in the NOTIFY queue".into(),
            ));
        }
        Ok(())
    }

    /// The fraction of the queues' bound that waiting notifications take
    /// (`pg_notification_queue_usage()`).
    pub fn queue_usage(&self) -> f64 {
        self.channels.queued.load(Ordering::Relaxed) as f64 / self.channels.bytes_max as f64
    }

    /// The channels the session listens to (`pg_listening_channels()`), as of its last
    /// commit.
    pub fn listening(&self) -> Vec<String> {
        self.state().listening.iter().cloned().collect()
    }

    pub(crate) fn mark(&self) -> Mark {
        let state = self.state();
        Mark {
            actions: state.actions.len(),
            pending: state.pending.len(),
        }
    }

    /// ROLLBACK TO SAVEPOINT: forgets what came after `mark`.
    pub(crate) fn rollback_to(&self, mark: Mark) {
        let mut state = self.state();
        state.actions.truncate(mark.actions);
        state.pending.truncate(mark.pending);
    }

    /// The transaction ended: a commit applies its LISTENs and UNLISTENs and sends its
    /// notifications; a rollback forgets them.
    pub(crate) fn end(&self, committed: bool) {
        let mut state = self.state();
        let actions = std::mem::take(&mut state.actions);
        let pending = std::mem::take(&mut state.pending);
        if !committed {
            return;
        }
        if !actions.is_empty() {
            let mut table = self.channels.table();
            for action in actions {
                match action {
                    Action::Listen(channel) => {
                        table
                            .entry(channel.clone())
                            .or_default()
                            .insert(self.id, self.sender.clone());
                        state.listening.insert(channel);
                    }
                    Action::Unlisten(channel) => {
                        remove(&mut table, &channel, self.id);
                        state.listening.remove(&channel);
                    }
                    Action::UnlistenAll => {
                        for channel in std::mem::take(&mut state.listening) {
                            remove(&mut table, &channel, self.id);
                        }
                    }
                }
            }
        }
        drop(state);
        if pending.is_empty() {
            return;
        }
        let pid = self.pid();
        let mut seen = HashSet::new();
        let table = self.channels.table();
        for (channel, payload) in pending {
            let Some(listeners) = table.get(&channel) else {
                continue;
            };
            if !seen.insert((channel.clone(), payload.clone())) {
                continue;
            }
            let bytes = Notification::bytes(&channel, &payload);
            for sender in listeners.values() {
                self.channels.queued.fetch_add(bytes, Ordering::Relaxed);
                let sent = sender.send(Notification {
                    pid,
                    channel: channel.clone(),
                    payload: payload.clone(),
                });
                // A queue gone with its connection, before its listener drops.
                if sent.is_err() {
                    self.channels.queued.fetch_sub(bytes, Ordering::Relaxed);
                }
            }
        }
    }

    /// Stops listening to everything at once (the session ends, or DISCARD ALL outside a
    /// transaction).
    pub(crate) fn unlisten_now(&self) {
        let mut state = self.state();
        let mut table = self.channels.table();
        for channel in std::mem::take(&mut state.listening) {
            remove(&mut table, &channel, self.id);
        }
    }
}

fn remove(
    table: &mut HashMap<String, HashMap<u64, UnboundedSender<Notification>>>,
    channel: &str,
    id: u64,
) {
    if let Some(listeners) = table.get_mut(channel) {
        listeners.remove(&id);
        if listeners.is_empty() {
            table.remove(channel);
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.unlisten_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(queue: &mut Queue) -> Vec<(String, String)> {
        let mut got = Vec::new();
        while let Some(n) = queue.try_next() {
            got.push((n.channel, n.payload));
        }
        got
    }

    fn pair(channel: &str, payload: &str) -> (String, String) {
        (channel.to_string(), payload.to_string())
    }

    #[test]
    fn commit_sends_once_each_in_order_and_rollback_drops() {
        let channels = Arc::new(Channels::default());
        let a = channels.listener();
        let b = channels.listener();
        let mut queue_a = a.take_queue().unwrap();
        let mut queue_b = b.take_queue().unwrap();
        assert!(a.take_queue().is_none());
        b.listen("jobs".into());
        b.end(true);
        a.listen("jobs".into());
        // Not committed yet: a does not listen.
        a.notify("jobs", "1").unwrap();
        a.notify("jobs", "2").unwrap();
        a.notify("jobs", "1").unwrap();
        a.notify("other", "x").unwrap();
        a.end(true);
        assert_eq!(
            drain(&mut queue_b),
            vec![pair("jobs", "1"), pair("jobs", "2")]
        );
        // a's LISTEN took effect at the same commit, after which nothing was sent.
        assert_eq!(
            drain(&mut queue_a),
            vec![pair("jobs", "1"), pair("jobs", "2")]
        );
        b.notify("jobs", "gone").unwrap();
        b.end(false);
        assert!(drain(&mut queue_a).is_empty());
        let mark = b.mark();
        b.notify("jobs", "kept").unwrap();
        b.rollback_to(mark);
        b.notify("jobs", "after").unwrap();
        b.end(true);
        assert_eq!(drain(&mut queue_a), vec![pair("jobs", "after")]);
        assert_eq!(drain(&mut queue_b), vec![pair("jobs", "after")]);
        a.unlisten(None);
        a.end(true);
        assert!(a.listening().is_empty());
        drop(b);
        assert!(channels.table().is_empty());
        assert_eq!(channels.queued.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_full_queue_refuses_the_commit_and_a_dropped_queue_frees_its_room() {
        let bound = 1 << 20;
        let channels = Arc::new(Channels::bounded(bound));
        let slow = channels.listener();
        let queue = slow.take_queue().unwrap();
        slow.listen("jobs".into());
        slow.end(true);
        let fast = channels.listener();
        let payload = "p".repeat(PAYLOAD_MAX);
        let each = Notification::bytes("jobs", &payload);
        let mut sent = 0;
        loop {
            fast.notify("jobs", &format!("{sent:08}{}", &payload[8..]))
                .unwrap();
            if fast.check_room().is_err() {
                fast.end(false);
                break;
            }
            fast.end(true);
            sent += 1;
        }
        assert_eq!(sent, bound / each);
        assert!(fast.queue_usage() > 0.99 && fast.queue_usage() <= 1.0);
        // A transaction that notifies no listener still commits.
        fast.notify("nobody", "x").unwrap();
        assert!(fast.check_room().is_ok());
        fast.end(true);
        drop(queue);
        assert_eq!(channels.queued.load(Ordering::Relaxed), 0);
        assert_eq!(fast.queue_usage(), 0.0);
        fast.notify("jobs", "again").unwrap();
        assert!(fast.check_room().is_ok());
    }

    #[test]
    fn limits_are_postgresql_s() {
        let channels = Arc::new(Channels::default());
        let a = channels.listener();
        assert!(a.notify("", "x").is_err());
        assert!(a.notify(&"c".repeat(CHANNEL_MAX + 1), "x").is_err());
        assert!(
            a.notify(&"c".repeat(CHANNEL_MAX), &"p".repeat(PAYLOAD_MAX))
                .is_ok()
        );
        assert!(a.notify("c", &"p".repeat(PAYLOAD_MAX + 1)).is_err());
    }
}
