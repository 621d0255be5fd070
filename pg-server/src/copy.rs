//! The COPY sub-protocol: CopyInResponse and the client's CopyData for COPY FROM STDIN,
//! CopyOutResponse and our CopyData for COPY TO STDOUT. Formats and batching are the
//! planner's (`planner::copy`); this module moves bytes.
//!
//! An error while data is still arriving is kept, the rest of the data is read and dropped,
//! and the error is reported at CopyDone, as PostgreSQL's protocol expects.

use crate::encode::{own_digit_columns, pg_type, put_binary_field};
use crate::errors::to_pg_error;
use crate::handler::{Handler, status};
use async_trait::async_trait;
use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::Tag;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse, CopyOutResponse};
use planner::copy::{BATCH_ROWS, CopyDecoder, CopyFormat, CopyIn};
use planner::output::write_text;
use std::fmt::Debug;

type Record = (usize, Vec<Option<String>>);

/// A COPY FROM STDIN in progress on a connection.
pub struct CopyState {
    target: CopyIn,
    decoder: CopyDecoder,
    batch: Vec<Record>,
    count: usize,
    error: Option<planner::Error>,
}

/// Starts COPY FROM STDIN: the client sends CopyData next.
pub async fn start_copy_in<C>(
    client: &mut C,
    handler: &Handler,
    target: CopyIn,
    extended: bool,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let columns = target.columns.len();
    let format = i8::from(target.format.binary);
    *handler.conn.copy.lock().await = Some(CopyState {
        decoder: CopyDecoder::new(target.format.clone(), target.types.clone()),
        target,
        batch: Vec::new(),
        count: 0,
        error: None,
    });
    client
        .send(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
            format,
            columns as i16,
            vec![i16::from(format); columns],
        )))
        .await?;
    client.set_state(PgWireConnectionState::CopyInProgress(extended));
    Ok(())
}

/// Sends a COPY TO STDOUT result: one CopyData message per row.
pub async fn send_copy_out<C>(
    client: &mut C,
    schema: SchemaRef,
    mut stream: SendableRecordBatchStream,
    format: &CopyFormat,
    style: &planner::output::TextStyle,
) -> PgWireResult<usize>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let columns = schema.fields().len();
    let binary = i8::from(format.binary);
    client
        .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            binary,
            columns as i16,
            vec![i16::from(binary); columns],
        )))
        .await?;
    let trim = own_digit_columns(&schema);
    let mut rows = 0;
    let mut text = String::new();
    let types: Vec<pgwire::api::Type> = schema.fields().iter().map(|f| pg_type(f)).collect();
    // In binary, the signature (no flags, no header extension) goes in the first message,
    // with the first row or the trailer, as PostgreSQL sends it (tokio-postgres's reader
    // expects a row after the header in the same message).
    let mut header = format.binary.then(|| {
        let mut out = BytesMut::from(&b"PGCOPY\n\xff\r\n\0"[..]);
        out.put_bytes(0, 8);
        out
    });
    if format.header {
        let mut out = Vec::new();
        for (c, field) in schema.fields().iter().enumerate() {
            if c > 0 {
                out.push(format.delimiter);
            }
            planner::copy::encode_field(format, Some(field.name()), &mut out);
        }
        out.push(b'\n');
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(out.into())))
            .await?;
    }
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| to_pg_error(&planner::Error::DataFusion(e)))?;
        // One CopyData per row, as PostgreSQL sends (clients such as psycopg rely on it).
        for r in 0..batch.num_rows() {
            if format.binary {
                let mut out = header.take().unwrap_or_default();
                out.put_i16(columns as i16);
                for (c, column) in batch.columns().iter().enumerate() {
                    if column.is_null(r) || column.data_type() == &DataType::Null {
                        out.put_i32(-1);
                        continue;
                    }
                    put_binary_field(column, r, &types[c], trim[c], style, &mut out)
                        .map_err(|e| to_pg_error(&planner::Error::Internal(e)))?;
                }
                rows += 1;
                client
                    .feed(PgWireBackendMessage::CopyData(CopyData::new(out.freeze())))
                    .await?;
                continue;
            }
            let mut out = Vec::new();
            for (c, column) in batch.columns().iter().enumerate() {
                if c > 0 {
                    out.push(format.delimiter);
                }
                if column.is_null(r) || column.data_type() == &DataType::Null {
                    planner::copy::encode_field(format, None, &mut out);
                    continue;
                }
                text.clear();
                write_text(column, r, style, &mut text)
                    .map_err(|e| to_pg_error(&planner::Error::Internal(e)))?;
                if let Some(least) = trim[c] {
                    planner::output::trim_fraction(&mut text, least);
                }
                planner::copy::encode_field(format, Some(&text), &mut out);
            }
            out.push(b'\n');
            rows += 1;
            client
                .feed(PgWireBackendMessage::CopyData(CopyData::new(out.into())))
                .await?;
        }
    }
    if format.binary {
        let mut trailer = header.take().unwrap_or_default();
        trailer.put_i16(-1);
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(
                trailer.freeze(),
            )))
            .await?;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    client
        .feed(PgWireBackendMessage::CommandComplete(
            Tag::new("COPY").with_rows(rows).into(),
        ))
        .await?;
    Ok(rows)
}

impl Handler {
    /// Inserts the batch collected so far; an error is kept for CopyDone.
    async fn flush_copy(&self, state: &mut CopyState) {
        if state.error.is_some() || state.batch.is_empty() {
            return;
        }
        let rows = std::mem::take(&mut state.batch);
        let mut session = self.conn.session.lock().await;
        match session.copy_rows(&state.target, rows).await {
            Ok(n) => state.count += n,
            Err(e) => state.error = Some(e),
        }
    }
}

#[async_trait]
impl CopyHandler for Handler {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.conn.copy.lock().await;
        let Some(state) = guard.as_mut() else {
            return Ok(());
        };
        if state.error.is_some() {
            return Ok(());
        }
        match state.decoder.push(&data.data) {
            Ok(records) => state.batch.extend(records),
            Err(e) => {
                state.error = Some(state.target.locate(e));
                return Ok(());
            }
        }
        while state.batch.len() >= BATCH_ROWS && state.error.is_none() {
            let rest = state.batch.split_off(BATCH_ROWS);
            self.flush_copy(state).await;
            state.batch = rest;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(mut state) = self.conn.copy.lock().await.take() else {
            return Ok(());
        };
        if state.error.is_none() {
            match state.decoder.finish() {
                Ok(records) => state.batch.extend(records),
                Err(e) => state.error = Some(state.target.locate(e)),
            }
        }
        self.flush_copy(&mut state).await;
        let session = self.conn.session.lock().await;
        client.set_transaction_status(status(&session));
        drop(session);
        if let Some(e) = state.error {
            return Err(to_pg_error(&e));
        }
        client
            .send(PgWireBackendMessage::CommandComplete(
                Tag::new("COPY").with_rows(state.count).into(),
            ))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.conn.copy.lock().await.take();
        self.conn.session.lock().await.statement_failed();
        PgWireError::UserError(Box::new(pgwire::error::ErrorInfo::new(
            "ERROR".into(),
            "57014".into(),
            format!("COPY from stdin failed: {}", fail.message),
        )))
    }
}
