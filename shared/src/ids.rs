//! Message bodies parsed into ids at the edge: logic never handles raw strings.

use std::fmt;

use uuid::Uuid;

/// A message body that is not the expected id: a poison message.
#[derive(Debug, thiserror::Error)]
#[error("message body is not a valid {kind} (expected a UUID string): {body:?}")]
pub struct InvalidId {
    pub kind: &'static str,
    /// The body, cut to 100 characters so a huge poison body does not flood the log.
    pub body: String,
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, sqlx::Type)]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// Parses a message body (surrounding whitespace allowed).
            pub fn parse(body: &str) -> Result<Self, InvalidId> {
                Uuid::parse_str(body.trim()).map($name).map_err(|_| InvalidId {
                    kind: $kind,
                    body: body.chars().take(100).collect(),
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                $name(id)
            }
        }
    };
}

id_type!(
    /// Body of an ingestion-queue message.
    IngestionId,
    "ingestion id"
);
id_type!(
    /// Body of a matching-queue message.
    DocumentId,
    "document id"
);
id_type!(
    /// Body of a document-output-queue message.
    OutputJobId,
    "document output job id"
);
id_type!(TenantId, "tenant id");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_body_parses_with_surrounding_whitespace() {
        let id = DocumentId::parse(" 0b8f7f1e-3c1d-4c57-9a39-0d5c1f3b2a10\n").unwrap();
        assert_eq!(id.to_string(), "0b8f7f1e-3c1d-4c57-9a39-0d5c1f3b2a10");
    }

    #[test]
    fn a_non_uuid_body_is_rejected_and_named() {
        let err = IngestionId::parse("hello").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"message body is not a valid ingestion id (expected a UUID string): "hello""#
        );
    }

    #[test]
    fn a_huge_poison_body_is_cut_in_the_error() {
        let err = OutputJobId::parse(&"x".repeat(10_000)).unwrap_err();
        assert_eq!(err.body.len(), 100);
    }
}
