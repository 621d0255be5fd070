//! Where COPY … TO/FROM 'location' (FORMAT parquet) reads and writes: local absolute paths
//! and `file://` URLs through DataFusion's local file system store, `s3://bucket/key` through
//! object_store's Amazon S3 client, configured from the usual environment variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`; `AWS_ENDPOINT` and
//! `AWS_ALLOW_HTTP=true` for an S3-compatible server). Other schemes are refused (0A000).

use crate::error::{Error, Result};
use datafusion::execution::context::SessionContext;
use object_store::aws::AmazonS3Builder;
use std::sync::Arc;

/// The location as DataFusion reads and writes it, with the object store it needs
/// registered on `ctx`.
pub fn resolve(ctx: &SessionContext, location: &str) -> Result<String> {
    if let Some(rest) = location.strip_prefix("s3://") {
        let bucket = rest.split('/').next().unwrap_or("");
        if bucket.is_empty() || rest.len() <= bucket.len() + 1 {
            return Err(Error::InvalidName(format!(
                "\"{location}\" names no object (s3://bucket/key)"
            )));
        }
        let store = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .map_err(|e| Error::ObjectStore(e.to_string()))?;
        let url = url::Url::parse(&format!("s3://{bucket}"))
            .map_err(|e| Error::InvalidName(e.to_string()))?;
        ctx.register_object_store(&url, Arc::new(store));
        return Ok(location.to_string());
    }
    if location.starts_with("file:///") {
        return Ok(location.to_string());
    }
    if location.contains("://") {
        return Err(Error::Unsupported(format!(
            "COPY to or from \"{location}\" (local paths, file:// and s3:// are supported)"
        )));
    }
    if !location.starts_with('/') {
        return Err(Error::InvalidName(
            "relative path not allowed for COPY to or from a file".into(),
        ));
    }
    Ok(location.to_string())
}
