//! The secret store against the emulator's Secrets Manager: fetch, cache, refresh after
//! the TTL, and errors that name what is missing without printing values.

use std::time::Duration;

use docflow::secrets::{SecretError, SecretStore};
use docflow_tests::{aws, unique};
use secrecy::ExposeSecret;

async fn create_secret(client: &aws_sdk_secretsmanager::Client, value: &str) -> String {
    let name = unique("docflow-test/app");
    client
        .create_secret()
        .name(&name)
        .secret_string(value)
        .send()
        .await
        .unwrap();
    name
}

#[tokio::test]
async fn a_value_is_fetched_cached_and_refreshed_after_the_ttl() {
    // A TTL no slow machine crosses by accident between two calls; the cache is aged
    // explicitly instead of waiting for it (STYLE.md, "Cancellation and time"). Aging
    // moves the fetch time back, so it stays below the machine's uptime.
    let ttl = Duration::from_secs(120);
    let client = aws_sdk_secretsmanager::Client::new(&aws().await);
    let name = create_secret(&client, r#"{"maesn_api_key":"first"}"#).await;
    let store = SecretStore::new(client.clone(), &name, ttl);

    assert_eq!(
        store.get("maesn_api_key").await.unwrap().expose_secret(),
        "first"
    );
    client
        .put_secret_value()
        .secret_id(&name)
        .secret_string(r#"{"maesn_api_key":"second"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(
        store.get("maesn_api_key").await.unwrap().expose_secret(),
        "first",
        "cached within the TTL"
    );
    // Half the TTL older: still the cached value.
    assert!(store.age_cache_for_test(ttl / 2).await);
    assert_eq!(
        store.get("maesn_api_key").await.unwrap().expose_secret(),
        "first",
        "cached until the TTL is over"
    );

    // Past the TTL.
    assert!(
        store
            .age_cache_for_test(ttl / 2 + Duration::from_secs(1))
            .await
    );
    assert_eq!(
        store.get("maesn_api_key").await.unwrap().expose_secret(),
        "second",
        "refreshed after the TTL"
    );
}

#[tokio::test]
async fn a_missing_secret_is_named() {
    let client = aws_sdk_secretsmanager::Client::new(&aws().await);
    let name = unique("docflow-test/absent");
    let store = SecretStore::new(client, &name, Duration::from_secs(60));

    let err = store.get("database_url").await.unwrap_err();

    assert!(matches!(err, SecretError::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains(&name), "{err}");
}

#[tokio::test]
async fn a_missing_key_is_named_without_printing_any_value() {
    let client = aws_sdk_secretsmanager::Client::new(&aws().await);
    let name = create_secret(&client, r#"{"database_url":"postgres://u:hunter2@db/x"}"#).await;
    let store = SecretStore::new(client, &name, Duration::from_secs(60));

    let err = store.get("slack_webhook_url").await.unwrap_err();

    let text = format!("{err} {err:?}");
    assert!(
        text.contains("slack_webhook_url") && text.contains(&name),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    let value = store.get("database_url").await.unwrap();
    assert!(
        !format!("{value:?}").contains("hunter2"),
        "Debug of a secret value is redacted"
    );
}

#[tokio::test]
async fn a_secret_that_is_not_json_is_reported_without_its_content() {
    let client = aws_sdk_secretsmanager::Client::new(&aws().await);
    let name = create_secret(&client, "hunter2-not-json").await;
    let store = SecretStore::new(client, &name, Duration::from_secs(60));

    let err = store.get("database_url").await.unwrap_err();

    assert!(matches!(err, SecretError::NotJson { .. }));
    assert!(!format!("{err} {err:?}").contains("hunter2"));
}

#[tokio::test]
async fn an_anthropic_client_without_its_key_fails_the_cold_start_and_a_local_openai_server_needs_none()
 {
    use docflow::llm::{LlmClient, LlmSettings, Provider};
    use docflow::retry::RetryPolicy;
    let client = aws_sdk_secretsmanager::Client::new(&aws().await);
    let name = create_secret(&client, r#"{"database_url":"postgres://x"}"#).await;
    let store = SecretStore::new(client, &name, Duration::from_secs(60));
    let settings = |provider| LlmSettings {
        provider: Some(provider),
        model: "m".into(),
        base_url: "http://127.0.0.1:9".into(),
        timeout: Duration::from_secs(1),
        max_tokens: 16,
        retry: RetryPolicy::default(),
    };

    let anthropic = LlmClient::from_secret(&settings(Provider::Anthropic), &store).await;
    let ollama = LlmClient::from_secret(&settings(Provider::OpenAi), &store).await;

    let err = anthropic.unwrap_err().to_string();
    assert!(
        err.contains("anthropic_api_key") && err.contains(&name),
        "{err}"
    );
    assert!(ollama.unwrap().is_some());
}

/// Every Secrets Manager call has a timeout. A Secrets Manager that
/// accepts the connection and never answers (a black hole behind NAT, a stuck proxy)
/// must not hold a cache miss — and with it an export — until the invocation dies.
#[tokio::test]
async fn a_secrets_manager_that_never_answers_is_a_transient_error_after_the_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    // Accepts every connection and holds it, reading nothing and answering nothing.
    let held = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let client = aws_sdk_secretsmanager::Client::new(&docflow::aws::local(&endpoint));
    let store = SecretStore::new(client, "docflow-test/black-hole", Duration::from_secs(60))
        .with_fetch_timeout(Duration::from_secs(1));

    let answer = tokio::time::timeout(Duration::from_secs(120), store.get("maesn_api_key"))
        .await
        .expect("the secret read ends on its own timeout, not the test's");

    let e = answer.unwrap_err();
    assert!(
        matches!(e, SecretError::TimedOut { .. }),
        "timed out: {e:?}"
    );
    assert!(docflow::retry::Classify::is_transient(&e), "{e:?}");
    let family = SecretStore::new(
        aws_sdk_secretsmanager::Client::new(&docflow::aws::local(&endpoint)),
        "docflow-test/black-hole",
        Duration::from_secs(60),
    )
    .with_fetch_timeout(Duration::from_secs(1))
    .family("docflow-test/black-hole/");
    let e = tokio::time::timeout(
        Duration::from_secs(120),
        family.get("tenant", "account_key"),
    )
    .await
    .expect("a family member inherits the timeout")
    .unwrap_err();
    assert!(matches!(e, SecretError::TimedOut { .. }), "{e:?}");
    held.abort();
}
