//! The database as AWS runs it: function roles with their own session settings, checked
//! when a function's pool opens a session; the migrate function (owner migrates, roles
//! set and tried). Through the local stack of `make up` (the RDS Proxy stand-in, the DB
//! instance's TLS endpoint, verify-full against the local CA).

use std::collections::BTreeSet;

use docflow::db::{FUNCTION_ROLES, SessionRefused, expected_schema_version};
use docflow_dev::local::database::{LocalDatabase, OWNER_ROLE};
use docflow_tests::ingestion_harness::*;
use docflow_tests::llm::anthropic_text;
use secrecy::SecretString;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::Mock;
use wiremock::matchers::{method, path};

fn secret(text: String) -> SecretString {
    SecretString::from(text)
}

/// A database of its own, owned by the schema owner, pgvector created by the superuser
/// (as `docflow local up` makes the stack's), not migrated.
async fn owned_database() -> (LocalDatabase, String) {
    let local = LocalDatabase::from_env().unwrap();
    let admin = PgPool::connect_with(local.superuser.clone().database("postgres"))
        .await
        .expect("the superuser (make up)");
    let name = format!("migrate_{}", &Uuid::new_v4().simple().to_string()[..12]);
    sqlx::query(&format!("CREATE DATABASE {name} OWNER {OWNER_ROLE}"))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let db = PgPool::connect_with(local.superuser.clone().database(&name))
        .await
        .unwrap();
    sqlx::query("CREATE EXTENSION vector")
        .execute(&db)
        .await
        .unwrap();
    db.close().await;
    (local, name)
}

async fn drop_database(local: &LocalDatabase, name: &str) {
    let admin = PgPool::connect_with(local.superuser.clone().database("postgres"))
        .await
        .unwrap();
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&admin)
        .await
        .unwrap();
}

fn roles(local: &LocalDatabase, database: &str) -> Vec<(docflow::db::FunctionRole, SecretString)> {
    FUNCTION_ROLES
        .iter()
        .map(|role| {
            (
                *role,
                secret(local.function_url(role.function, Some(database)).unwrap()),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_migrate_function_migrates_as_the_owner_then_sets_and_tries_every_role() {
    let (local, name) = owned_database().await;
    let owner = secret(local.role_url(OWNER_ROLE, &name, false));

    let first = migrate::run(&owner, &roles(&local, &name), None)
        .await
        .expect("a first migration");

    assert_eq!(first.schema_version, expected_schema_version());
    let all: BTreeSet<i64> = docflow::db::MIGRATOR.iter().map(|m| m.version).collect();
    assert_eq!(first.applied.iter().copied().collect::<BTreeSet<_>>(), all);
    assert_eq!(first.roles.len(), 4);
    for check in &first.roles {
        assert!(
            check.read && check.write && check.error.is_none(),
            "{check:?}"
        );
    }
    // The migrations own the schema: every table is the owner's.
    let db = PgPool::connect_with(local.superuser.clone().database(&name))
        .await
        .unwrap();
    let owners: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT pg_get_userbyid(relowner)::text FROM pg_class c \
           JOIN pg_namespace n ON n.oid = c.relnamespace \
          WHERE n.nspname = 'public' AND c.relkind = 'r'",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(owners, vec![OWNER_ROLE.to_owned()]);
    // A table a later migration adds is readable by every function role.
    let owner_pool = PgPool::connect(&local.role_url(OWNER_ROLE, &name, false))
        .await
        .unwrap();
    sqlx::query("CREATE TABLE later_table (id int)")
        .execute(&owner_pool)
        .await
        .unwrap();
    owner_pool.close().await;
    for role in FUNCTION_ROLES {
        let readable: bool =
            sqlx::query_scalar("SELECT has_table_privilege($1, 'later_table', 'SELECT')")
                .bind(role.role)
                .fetch_one(&db)
                .await
                .unwrap();
        assert!(readable, "{}", role.role);
    }
    db.close().await;

    let second = migrate::run(&owner, &roles(&local, &name), None)
        .await
        .expect("a second run");
    assert!(second.applied.is_empty(), "{second:?}");
    assert_eq!(second.schema_version, expected_schema_version());
    drop_database(&local, &name).await;
}

#[tokio::test]
async fn the_migrate_function_refuses_a_function_url_of_another_role_before_migrating() {
    let (local, name) = owned_database().await;
    let owner = secret(local.role_url(OWNER_ROLE, &name, false));
    let mut roles = roles(&local, &name);
    roles[1].1 = secret(local.role_url("docflow_ingestion", &name, true));

    let error = migrate::run(&owner, &roles, None).await.unwrap_err();

    assert!(
        error.to_string().contains(
            "connects as \"docflow_ingestion\", not as the function's role docflow_matching"
        ),
        "{error}"
    );
    let db = PgPool::connect_with(local.superuser.clone().database(&name))
        .await
        .unwrap();
    let migrated: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(&db)
        .await
        .unwrap();
    assert!(!migrated);
    db.close().await;
    drop_database(&local, &name).await;
}

/// The superuser has none of the function roles' session settings: a function refuses
/// to consume with its sessions, naming the setting.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_function_refuses_a_session_without_the_roles_settings(pool: PgPool) {
    let gate = docflow::db::Gate::new(pool.clone());

    let refused = gate.check().await.unwrap_err();

    assert!(
        matches!(
            refused,
            SessionRefused::Setting {
                setting: "lock_timeout",
                found_ms: 0,
                ..
            }
        ),
        "{refused:?}"
    );
    // As the function's role, the same database passes.
    let gate = docflow::db::Gate::new(docflow_tests::function_pool(&pool, "ingestion"));
    assert_eq!(gate.check().await, Ok(()));
}

/// Code deployed before its migration: the function's sessions are refused, so it claims
/// nothing and its message is released, not failed; once migrated, the same message is
/// processed.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_function_whose_schema_is_older_than_its_code_releases_its_messages(pool: PgPool) {
    let newest = expected_schema_version();
    let (checksum, description): (Vec<u8>, String) = sqlx::query_as(
        "DELETE FROM _sqlx_migrations WHERE version = $1 RETURNING checksum, description",
    )
    .bind(newest)
    .fetch_one(&pool)
    .await
    .unwrap();
    let h = harness(pool.clone(), Ocr::Native).await;
    let id = Uuid::new_v4();
    let text = "Factuur 2014-117\nFactuurdatum: 19 april 2014\nTotaal: € 242,00\n";
    h.seed(id, "txt", Some(text.as_bytes().to_vec())).await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_text(&format!("```json\n{}\n```", invoice_json())))
        .mount(&h.llm)
        .await;

    let (event, response) = h.deliver(id).await;

    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "released, not deleted"
    );
    assert_eq!(
        Some(response.batch_item_failures[0].item_identifier.as_str()),
        event.records[0].message_id.as_deref()
    );
    let row = h.ingestion(id).await;
    assert_eq!(
        (row.status.as_str(), row.attempt_count, row.leased),
        ("in-progress", 0, false),
        "nothing claimed, nothing failed"
    );

    // The operator migrates: the next delivery is processed.
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, $2, true, $3, 0)",
    )
    .bind(newest)
    .bind(description)
    .bind(checksum)
    .execute(&pool)
    .await
    .unwrap();
    let (_, response) = h.deliver(id).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.ingestion(id).await.status, "completed");
}
