//! Document vocabulary shared by extraction, ingestion and matching, and the rules of
//! which document types pair up ([`DocumentType::matchable_with`],
//! [`DocumentType::exclusive`], [`DocumentType::follows`]).

use serde::{Deserialize, Serialize};

/// The `document_type` enum of the schema, and the extraction contract's
/// `document_type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type)]
#[sqlx(type_name = "document_type", rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum DocumentType {
    Invoice,
    PurchaseOrder,
    DeliveryNote,
    CreditNote,
    Other,
}

impl DocumentType {
    /// The enum label, as in the database and the JSON contract.
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentType::Invoice => "invoice",
            DocumentType::PurchaseOrder => "purchase_order",
            DocumentType::DeliveryNote => "delivery_note",
            DocumentType::CreditNote => "credit_note",
            DocumentType::Other => "other",
        }
    }

    /// The type of an enum label; `None` for a label this version does not know (the
    /// application may add types to the database's enum before docflow learns them).
    pub fn from_label(label: &str) -> Option<Self> {
        [
            DocumentType::Invoice,
            DocumentType::PurchaseOrder,
            DocumentType::DeliveryNote,
            DocumentType::CreditNote,
            DocumentType::Other,
        ]
        .into_iter()
        .find(|t| t.as_str() == label)
    }

    /// The types a document of this type can be linked to: invoice ↔ purchase order,
    /// invoice ↔ delivery note, purchase order ↔ delivery note, credit note ↔ the invoice
    /// it corrects. Other documents are not matched.
    pub fn matchable_with(self) -> &'static [DocumentType] {
        match self {
            DocumentType::Invoice => &[
                DocumentType::PurchaseOrder,
                DocumentType::DeliveryNote,
                DocumentType::CreditNote,
            ],
            DocumentType::PurchaseOrder => &[DocumentType::Invoice, DocumentType::DeliveryNote],
            DocumentType::DeliveryNote => &[DocumentType::Invoice, DocumentType::PurchaseOrder],
            DocumentType::CreditNote => &[DocumentType::Invoice],
            DocumentType::Other => &[],
        }
    }

    /// Whether matching links this type to others.
    pub fn is_matchable(self) -> bool {
        !self.matchable_with().is_empty()
    }

    /// Whether a document of this type (the child) has at most one partner of type
    /// `parent`: a delivery note belongs to one order and one invoice, an invoice to one
    /// order, a credit note to the one invoice it corrects. An order has many deliveries
    /// and invoices; an invoice may cover many delivery notes.
    pub fn exclusive(self, parent: DocumentType) -> bool {
        use DocumentType::*;
        matches!(
            (self, parent),
            (DeliveryNote, PurchaseOrder)
                | (DeliveryNote, Invoice)
                | (Invoice, PurchaseOrder)
                | (CreditNote, Invoice)
        )
    }

    /// Whether a document of this type comes after one of type `origin` in a purchase:
    /// delivery notes and invoices after their order, a credit note after its invoice.
    pub fn follows(self, origin: DocumentType) -> bool {
        use DocumentType::*;
        matches!(
            (origin, self),
            (PurchaseOrder, DeliveryNote) | (PurchaseOrder, Invoice) | (Invoice, CreditNote)
        )
    }

    /// Whether the pair is an invoice and a delivery note, either way round: the one pair
    /// that both cite what ties it (the order), and whose quantities tell partial
    /// deliveries apart.
    pub fn invoice_and_delivery(a: DocumentType, b: DocumentType) -> bool {
        use DocumentType::*;
        matches!((a, b), (Invoice, DeliveryNote) | (DeliveryNote, Invoice))
    }
}

/// How sure an extraction or a match is: the contract's `confidence` and
/// `document_match.confidence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}
