"""BENCHMARK PEER, NEVER SHIPPED (see README.md).

Ingestion of a text PDF as a Python Lambda handler with Powertools' BatchProcessor:
claim the ingestion (docflow's claim statement), fetch the file from S3, read its text
layer with pypdf, extract a rules subset (regular expressions for the fields docflow's
quality gate needs), complete the ingestion and type the document in one transaction
(docflow's two statements), and hand a matchable document to the matching queue.
"""

import json
import os
import re
import uuid
from datetime import date
from io import BytesIO

import boto3
import psycopg
from psycopg.types.json import Jsonb
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pypdf import PdfReader

logger = Logger()
processor = BatchProcessor(event_type=EventType.SQS)

# Built once per cold start, like docflow's Deps.
_session = boto3.session.Session()
_s3 = _session.client("s3")
_sqs = _session.client("sqs")
_secrets = _session.client("secretsmanager")
_database_url = os.environ.get("DATABASE_URL") or json.loads(
    _secrets.get_secret_value(SecretId=os.environ["DOCFLOW_SECRET_ID"])["SecretString"]
)["database_url"]
_db = psycopg.connect(_database_url, autocommit=True)
_bucket = os.environ["DOCUMENTS_BUCKET"]
_matching_queue = os.environ["MATCHING_QUEUE_URL"]
_stale_after = float(os.environ.get("STALE_INGESTION_SECONDS", "300"))

CLAIM = """
UPDATE ingestion i
   SET started_at = now(), updated_at = now(), claim_token = gen_random_uuid()
  FROM document d, (SELECT started_at FROM ingestion WHERE id = %s) before
 WHERE i.id = %s
   AND d.id = i.document_id
   AND i.status = 'in-progress'
   AND (i.started_at IS NULL OR i.started_at < now() - make_interval(secs => %s))
RETURNING i.id, i.document_id, d.tenant_id, i.attempt_count, d.file_path,
          (before.started_at IS NOT NULL OR i.attempt_count > 0) AS tried_before,
          i.claim_token AS token
"""
COMPLETE = """
UPDATE ingestion
   SET status = 'completed',
       structured_data = %s,
       valid_structured_data = true,
       extraction_input_tokens = NULL,
       extraction_output_tokens = NULL,
       extraction_model = 'rules',
       last_error = NULL,
       completed_at = now(),
       updated_at = now()
 WHERE id = %s AND status = 'in-progress' AND claim_token = %s
"""
TYPE_DOCUMENT = """
UPDATE document
   SET type = %s::document_type,
       matching_status = CASE WHEN %s THEN 'pending' ELSE matching_status END,
       updated_at = now()
 WHERE id = %s
"""
MATCHABLE = {"invoice", "purchase_order", "delivery_note", "credit_note"}


# ------------------------------------------------------------------ the rules subset

KINDS = [
    ("credit_note", re.compile(r"\b(gutschrift|rechnungskorrektur|credit note)\b", re.I)),
    ("invoice", re.compile(r"\b(rechnung|invoice)\b", re.I)),
    ("purchase_order", re.compile(r"\b(bestellung|purchase order)\b", re.I)),
    ("delivery_note", re.compile(r"\b(lieferschein|delivery note)\b", re.I)),
]
NUMBER = re.compile(r"(?:rechnungs-?n(?:umme)?r\.?|rechnung\s+nr\.?|invoice\s+(?:no\.?|number))\s*:?\s*([A-Z0-9][A-Z0-9/_.-]{2,})", re.I)
DATE_LABEL = re.compile(r"(?:rechnungsdatum|datum|invoice date|date)\s*:?\s*(\d{1,2})\.(\d{1,2})\.(\d{4})", re.I)
ANY_DATE = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b")
PO = re.compile(r"(?:ihre\s+bestellung|bestellnummer|bestellung|po\s+number)\s*:?\s*([A-Z]{1,4}-?[0-9][A-Z0-9-]{2,})", re.I)
VAT_ID = re.compile(r"\b(DE)\s?(\d{9})\b")
AMOUNT = r"(-?\d{1,3}(?:\.\d{3})*,\d{2}|-?\d+,\d{2})"
TOTAL = re.compile(r"(?:rechnungsbetrag|gesamtbetrag|gesamt|total|zu zahlen)\s*:?\s*" + AMOUNT, re.I)
NET = re.compile(r"(?:summe netto|nettobetrag|netto|subtotal)\s*:?\s*" + AMOUNT, re.I)
VAT = re.compile(r"(?:mwst\.?|ust\.?|umsatzsteuer|vat)[^\d\n]*(?:\d{1,2}\s*%[^\d\n]*)?" + AMOUNT, re.I)
COMPANY = re.compile(r"\b(GmbH|AG|KG|UG|e\.K\.|Ltd|SE)\b")


def _amount(text):
    return float(text.replace(".", "").replace(",", "."))


def _date(m):
    try:
        return date(int(m.group(3)), int(m.group(2)), int(m.group(1))).isoformat()
    except ValueError:
        return None


def extract(text):
    lines = [re.sub(r"\s+", " ", l).strip() for l in text.splitlines()]
    lines = [l for l in lines if l]
    flat = "\n".join(lines)
    kind = next((k for k, rx in KINDS if rx.search(flat)), "other")
    out = {"document_type": kind, "currency": "EUR" if ("€" in flat or "EUR" in flat) else None}
    confidence = {}
    if m := NUMBER.search(flat):
        out["invoice_number"], confidence["invoice_number"] = m.group(1), "high"
    m = DATE_LABEL.search(flat) or ANY_DATE.search(flat)
    if m and (d := _date(m)):
        out["invoice_date"], confidence["invoice_date"] = d, "high"
    # The supplier: the first line naming a company (the letterhead).
    if supplier := next((l for l in lines if COMPANY.search(l)), None):
        out["supplier_name"], confidence["supplier_name"] = supplier.split(" | ")[0], "medium"
    if m := VAT_ID.search(flat):
        out["supplier_vat_id"] = m.group(1) + m.group(2)
    if m := PO.search(flat):
        out["po_reference"] = m.group(1)
    totals = [_amount(m.group(1)) for m in TOTAL.finditer(flat)]
    if totals:
        out["total"], confidence["total"] = totals[-1], "high"
    if m := NET.search(flat):
        out["subtotal"] = _amount(m.group(1))
    if m := VAT.search(flat):
        out["vat_amount"] = _amount(m.group(1))
    gate = ["invoice_number", "invoice_date", "supplier_name", "total"]
    missing = [f for f in gate if out.get(f) is None]
    booked = kind in ("invoice", "credit_note")
    out.update(
        extraction_successful=not (booked and missing),
        confidence="high" if not missing else "medium",
        missing_fields=missing,
        field_confidence=confidence,
        line_items=[],
    )
    return out


# ------------------------------------------------------------------ the handler


def record_handler(record: SQSRecord):
    ingestion_id = str(uuid.UUID(record.body))
    row = _db.execute(CLAIM, (ingestion_id, ingestion_id, _stale_after)).fetchone()
    if row is None:
        logger.warning("ingestion not claimable", extra={"ingestion_id": ingestion_id})
        return
    _, document_id, _tenant_id, _attempts, file_path, _tried_before, token = row
    if not file_path.lower().endswith(".pdf"):
        raise ValueError(f"the peer reads text PDFs only, not {file_path}")
    body = _s3.get_object(Bucket=_bucket, Key=file_path)["Body"].read()
    reader = PdfReader(BytesIO(body))
    text = "\n".join(page.extract_text() or "" for page in reader.pages)
    if not text.strip():
        raise ValueError(f"no text layer in {file_path}")
    data = extract(text)
    if not data["extraction_successful"]:
        raise ValueError(f"extraction quality gate failed: missing {data['missing_fields']}")
    kind = data["document_type"]
    with _db.transaction():
        completed = _db.execute(COMPLETE, (Jsonb(data), ingestion_id, token)).rowcount
        if completed == 0:
            raise RuntimeError("the ingestion lease is no longer ours")
        _db.execute(TYPE_DOCUMENT, (kind, kind in MATCHABLE, document_id))
    if kind in MATCHABLE:
        _sqs.send_message(QueueUrl=_matching_queue, MessageBody=str(document_id))


@logger.inject_lambda_context
def lambda_handler(event, context):
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
