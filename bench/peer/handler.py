"""BENCHMARK PEER, NEVER SHIPPED (see README.md).

Document output's claim -> dispatch -> complete path as a Python Lambda handler with
Powertools' BatchProcessor: the same statements as docflow's document-output function.
"""

import hashlib
import json
import os
import uuid

import boto3
import psycopg
import urllib3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

logger = Logger()
processor = BatchProcessor(event_type=EventType.SQS)

# Built once per cold start, like docflow's Deps.
_session = boto3.session.Session()
_s3 = _session.client("s3")
_secrets = _session.client("secretsmanager")
_http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=2.0, read=10.0))
_db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
_bucket = os.environ["DOCUMENTS_BUCKET"]
_maesn = os.environ["MAESN_BASE_URL"].rstrip("/")
_prefix = os.environ["DATEV_CREDENTIALS_PREFIX"]
_secret_cache = {}


def _secret(secret_id):
    if secret_id not in _secret_cache:
        value = _secrets.get_secret_value(SecretId=secret_id)["SecretString"]
        _secret_cache[secret_id] = json.loads(value)
    return _secret_cache[secret_id]


CLAIM = """
UPDATE document_output_job
   SET status = 'running', started_at = COALESCE(started_at, now()), updated_at = now(),
       claim_token = gen_random_uuid()
 WHERE id = %s
   AND (status = 'pending'
        OR (status = 'running' AND updated_at < now() - make_interval(secs => %s)))
RETURNING id, tenant_id, document_id, claim_token
"""
PREVIOUS_AUDIT = """
SELECT id, document_id, dispatch_job_id, status, task_id, error, retryable
  FROM ap_datev_export_audit WHERE dispatch_job_id = %s ORDER BY created_at DESC
"""
ELIGIBLE = """
SELECT document_is_approved(d.id) AS approved,
       EXISTS (SELECT 1 FROM tenant_datev_integration i
                WHERE i.tenant_id = d.tenant_id AND i.status = 'active') AS integrated
  FROM document d WHERE d.id = %s
"""
CONTEXT = """
SELECT d.file_path, d.file_name, d.mime_type, d.structured_data, i.company_id, i.config
  FROM document d
  JOIN tenant_datev_integration i ON i.tenant_id = d.tenant_id AND i.status = 'active'
 WHERE d.id = %s
"""
AUDIT = """
INSERT INTO ap_datev_export_audit
       (tenant_id, document_id, dispatch_job_id, status, request_payload, payload_hash)
SELECT j.tenant_id, j.document_id, j.id, 'requested', %s, %s
  FROM document_output_job j
 WHERE j.id = %s AND j.status = 'running' AND j.claim_token = %s
RETURNING id
"""
SUBMITTED = """
UPDATE ap_datev_export_audit SET status = 'submitted', task_id = %s, updated_at = now()
 WHERE id = %s
"""
DISPATCHED = """
UPDATE document_output_job
   SET status = 'dispatched', last_error = NULL, completed_at = now(), updated_at = now()
 WHERE id = %s AND status = 'running' AND claim_token = %s
"""


def _maesn_date(iso_date):
    """Maesn's standardized date: ISO 8601, a date-time in UTC."""
    return f"{iso_date}T00:00:00Z"


def _text(value):
    return value.strip() if isinstance(value, str) and value.strip() else None


def _proposal(document_id, data):
    """The proposal docflow's `proposal_body` builds from the stored extraction: the
    same fields under Maesn's names, what was not found left out."""
    proposal = {"id": str(document_id)}
    fields = {
        "number": _text(data.get("invoice_number")),
        "bookingProposalDate": data.get("invoice_date") and _maesn_date(data["invoice_date"]),
        "dueDate": data.get("due_date") and _maesn_date(data["due_date"]),
        "currency": _text(data.get("currency")) and data["currency"].strip().upper(),
        "totalGrossAmount": data.get("total"),
        "vatId": _text(data.get("supplier_vat_id")) and "".join(data["supplier_vat_id"].split()),
        "orderId": _text(data.get("po_reference")),
    }
    proposal.update({k: v for k, v in fields.items() if v is not None})
    if _text(data.get("supplier_name")):
        proposal["contact"] = {"name": data["supplier_name"].strip()}
    if _text(data.get("supplier_iban")):
        proposal["bankAccount"] = {"iban": "".join(data["supplier_iban"].split())}
    lines = []
    for line in data.get("line_items") or []:
        entry = {}
        if _text(line.get("description")):
            entry["description"] = line["description"].strip()
        if line.get("amount") is not None:
            entry["totalNetAmount"] = line["amount"]
        if entry:
            lines.append(entry)
    if lines:
        proposal["lineItems"] = lines
    return proposal


def record_handler(record: SQSRecord):
    job_id = str(uuid.UUID(record.body))
    row = _db.execute(CLAIM, (job_id, 600.0)).fetchone()
    if row is None:
        logger.warning("job not claimable", extra={"job_id": job_id})
        return
    _, tenant_id, document_id, token = row
    previous = _db.execute(PREVIOUS_AUDIT, (job_id,)).fetchall()
    if previous:
        raise RuntimeError("an earlier export attempt exists; not handled by the peer")
    approved, integrated = _db.execute(ELIGIBLE, (document_id,)).fetchone()
    if not (approved and integrated):
        raise RuntimeError("document not eligible")
    ctx = _db.execute(CONTEXT, (document_id,)).fetchone()
    file_path, file_name, mime_type, data, company_id, config = ctx
    data = data or {}
    config = config or {}
    body = _s3.get_object(Bucket=_bucket, Key=file_path)["Body"].read()
    proposal = _proposal(document_id, data)
    booking_type = config.get("booking_type", "BILL")
    folder = config.get("folder_management", {"category": "Accounting", "folder": "Invoices"})
    payload = json.dumps({"bookingProposal": proposal, "bookingType": booking_type}, sort_keys=True)
    payload_hash = hashlib.sha256(payload.encode()).hexdigest()
    (audit_id,) = _db.execute(AUDIT, (payload, payload_hash, job_id, token)).fetchone()

    api_key = _secret(os.environ["DOCFLOW_SECRET_ID"])["maesn_api_key"]
    account_key = _secret(f"{_prefix}{tenant_id}")["account_key"]
    response = _http.request(
        "POST",
        f"{_maesn}/accounting/bookingProposals/async?companyId={company_id}",
        headers={"X-API-KEY": api_key, "X-ACCOUNT-KEY": account_key},
        fields={
            "bookingProposal": (None, json.dumps(proposal), "application/json"),
            "bookingType": booking_type,
            "folderManagement": (None, json.dumps(folder), "application/json"),
            "files": (file_name or file_path.rsplit("/", 1)[-1], body, mime_type or "application/octet-stream"),
        },
    )
    if response.status != 200:
        raise RuntimeError(f"Maesn answered {response.status}: {response.data[:200]!r}")
    task_id = json.loads(response.data)["data"]["taskId"]
    with _db.transaction():
        _db.execute(SUBMITTED, (task_id, audit_id))
        _db.execute(DISPATCHED, (job_id, token))


@logger.inject_lambda_context
def lambda_handler(event, context):
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
