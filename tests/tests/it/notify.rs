//! Admin notifications on the wire: the Slack webhook body (wiremock) and the SES email
//! (moto's sent-email dump), channel opt-in from the secret and settings, and a failing
//! channel that does not stop the others.

use crate::matching_support;

use std::time::Duration;

use docflow::notify::NotifyRetry;
use docflow::notify::{AdminNotice, Delivery, Notifier, NotifySettings, SesChannel, SlackChannel};
use docflow::secrets::SecretStore;
use docflow_tests::logs::Logs;
use docflow_tests::{aws, unique};
use matching_support::{
    ADMIN_BASE_URL, fast_retry, moto_data, slack_bodies, slack_notifier, slack_server,
};
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn notice() -> AdminNotice {
    AdminNotice {
        title: "Document matching failed".into(),
        document_id: Uuid::new_v4(),
        document_type: Some("invoice".into()),
        tenant_id: Some(Uuid::new_v4()),
        tenant_name: Some("Acme AG".into()),
        error: "the LLM could not decide: LLM rejected the request as too large".into(),
        attempts: 3,
    }
}

/// A sender identity verified in moto (it rejects unverified senders, as SES does).
async fn verified_sender(ses: &aws_sdk_sesv2::Client) -> String {
    let from = format!("{}@docflow.test", unique("alerts"));
    ses.create_email_identity()
        .email_identity(&from)
        .send()
        .await
        .expect("verify the sender in moto");
    from
}

/// The emails moto's SES holds from `from`.
async fn sent_emails(from: &str) -> Vec<Value> {
    moto_data().await["ses"]["Message"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m["source"] == from)
        .collect()
}

#[tokio::test]
async fn slack_receives_document_tenant_error_attempts_and_the_admin_link() {
    let slack = slack_server().await;
    let notifier = slack_notifier(&slack);
    let n = notice();

    let delivery = notifier.notify(&n).await;

    assert_eq!(
        delivery,
        Delivery {
            sent: vec!["slack"],
            failed: vec![]
        }
    );
    let bodies = slack_bodies(&slack).await;
    assert_eq!(bodies.len(), 1);
    let link = format!("{ADMIN_BASE_URL}/admin/documents/{}", n.document_id);
    let tenant = format!("Acme AG ({})", n.tenant_id.unwrap());
    assert_eq!(
        bodies[0],
        json!({
            "text": format!("Document matching failed: document {} (tenant {tenant}): {}", n.document_id, n.error),
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": "Document matching failed"}},
                {"type": "section", "fields": [
                    {"type": "mrkdwn", "text": format!("*Document*\n<{link}|{}> (invoice)", n.document_id)},
                    {"type": "mrkdwn", "text": format!("*Tenant*\n{tenant}")},
                    {"type": "mrkdwn", "text": "*Attempts*\n3"},
                ]},
                {"type": "section", "text": {"type": "mrkdwn", "text": format!("*Error*\n```{}```", n.error)}},
            ]
        })
    );
    let request = &slack.received_requests().await.unwrap()[0];
    assert_eq!(
        request.headers.get("content-type").unwrap(),
        "application/json"
    );
}

#[tokio::test]
async fn ses_sends_the_email_with_subject_body_and_recipients() {
    let ses = aws_sdk_sesv2::Client::new(&aws().await);
    let from = verified_sender(&ses).await;
    let to = vec!["ops@docflow.test".to_owned(), "ap@docflow.test".to_owned()];
    let notifier = Notifier::new(Some(ADMIN_BASE_URL.into()), Duration::from_secs(5))
        .with_channel(SesChannel::new(ses, from.clone(), to.clone()));
    let n = notice();

    let delivery = notifier.notify(&n).await;

    assert_eq!(delivery.sent, vec!["email"]);
    let emails = sent_emails(&from).await;
    assert_eq!(emails.len(), 1, "{emails:?}");
    let email = &emails[0];
    assert_eq!(
        email["subject"],
        format!(
            "[docflow] Document matching failed: document {}",
            n.document_id
        )
    );
    assert_eq!(email["destinations"]["ToAddresses"], json!(to));
    let body = email["body"].as_str().unwrap();
    for part in [
        format!("Document: {}", n.document_id),
        "Type: invoice".to_owned(),
        format!("Tenant: Acme AG ({})", n.tenant_id.unwrap()),
        "Attempts: 3".to_owned(),
        format!("Error: {}", n.error),
        format!(
            "Admin page: {ADMIN_BASE_URL}/admin/documents/{}",
            n.document_id
        ),
    ] {
        assert!(body.contains(&part), "{part:?} missing in {body}");
    }
}

#[tokio::test]
async fn a_failing_channel_is_reported_and_the_other_still_delivers() {
    let broken_slack = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(404).set_body_string("no_service"))
        .mount(&broken_slack)
        .await;
    let ses = aws_sdk_sesv2::Client::new(&aws().await);
    let from = verified_sender(&ses).await;
    let notifier = Notifier::new(None, Duration::from_secs(5))
        .with_channel(SlackChannel::new(
            reqwest::Client::new(),
            format!("{}/services/gone", broken_slack.uri()).into(),
        ))
        .with_channel(SesChannel::new(
            ses,
            from.clone(),
            vec!["ops@docflow.test".into()],
        ));

    let delivery = notifier.notify(&notice()).await;

    assert_eq!(
        delivery,
        Delivery {
            sent: vec!["email"],
            failed: vec!["slack"]
        }
    );
    assert_eq!(sent_emails(&from).await.len(), 1);
}

#[tokio::test]
async fn an_unverified_sender_fails_only_its_channel() {
    let ses = aws_sdk_sesv2::Client::new(&aws().await);
    let notifier = Notifier::new(None, Duration::from_secs(5)).with_channel(SesChannel::new(
        ses,
        format!("{}@unverified.test", unique("nobody")),
        vec!["ops@docflow.test".into()],
    ));

    let delivery = notifier.notify(&notice()).await;

    assert_eq!(
        delivery,
        Delivery {
            sent: vec![],
            failed: vec!["email"]
        }
    );
}

#[tokio::test]
async fn channels_are_enabled_only_by_their_configuration() {
    let config = aws().await;
    let secrets = aws_sdk_secretsmanager::Client::new(&config);
    let without = unique("docflow-test/notify");
    secrets
        .create_secret()
        .name(&without)
        .secret_string(r#"{"database_url":"postgres://x"}"#)
        .send()
        .await
        .unwrap();
    let with = unique("docflow-test/notify");
    secrets
        .create_secret()
        .name(&with)
        .secret_string(r#"{"slack_webhook_url":"https://hooks.slack.com/services/T/B/X"}"#)
        .send()
        .await
        .unwrap();
    let store = |id: &str| SecretStore::new(secrets.clone(), id, Duration::from_secs(60));
    let email = NotifySettings {
        email_from: Some("alerts@docflow.test".into()),
        email_to: vec!["ops@docflow.test".into()],
        admin_base_url: None,
        timeout: Duration::from_secs(5),
        retry: NotifyRetry::default(),
    };
    let only_from = NotifySettings {
        email_to: vec![],
        ..email.clone()
    };

    let none = Notifier::from_settings(&only_from, &store(&without), &config)
        .await
        .unwrap();
    let both = Notifier::from_settings(&email, &store(&with), &config)
        .await
        .unwrap();

    assert!(none.channel_names().is_empty());
    assert_eq!(both.channel_names(), vec!["slack", "email"]);
}

fn slack_at(server: &MockServer) -> SlackChannel {
    SlackChannel::new(
        reqwest::Client::new(),
        format!("{}/services/T000/B000/XXXX", server.uri()).into(),
    )
}

#[tokio::test]
async fn a_transient_slack_error_is_retried_and_the_notice_delivered() {
    let slack = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("rollup_error"))
        .up_to_n_times(1)
        .mount(&slack)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&slack)
        .await;
    let notifier = Notifier::new(None, Duration::from_secs(5))
        .with_retry(fast_retry())
        .with_channel(slack_at(&slack));

    let delivery = notifier.notify(&notice()).await;

    assert!(delivery.delivered());
    assert_eq!(delivery.sent, vec!["slack"]);
    assert_eq!(slack_bodies(&slack).await.len(), 2);
}

#[tokio::test]
async fn a_permanent_slack_error_is_not_retried() {
    let slack = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(404).set_body_string("no_service"))
        .mount(&slack)
        .await;
    let notifier = Notifier::new(None, Duration::from_secs(5))
        .with_retry(fast_retry())
        .with_channel(slack_at(&slack));

    let delivery = notifier.notify(&notice()).await;

    assert!(!delivery.delivered());
    assert_eq!(delivery.failed, vec!["slack"]);
    assert_eq!(slack_bodies(&slack).await.len(), 1);
}

#[tokio::test]
async fn retries_stop_at_the_callers_deadline() {
    let slack = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("unavailable"))
        .mount(&slack)
        .await;
    // The next attempt would start an hour later: only the deadline can end this.
    let notifier = Notifier::new(None, Duration::from_secs(5))
        .with_retry(NotifyRetry {
            attempts: 3,
            base_delay: Duration::from_secs(3600),
        })
        .with_channel(slack_at(&slack));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);

    let delivery = tokio::time::timeout(
        Duration::from_secs(60),
        notifier.notify_until(&notice(), Some(deadline)),
    )
    .await
    .expect("notify_until returned at its deadline, not after the hour-long wait");

    assert_eq!(delivery.failed, vec!["slack"]);
    assert_eq!(slack_bodies(&slack).await.len(), 1);
}

#[tokio::test]
async fn slack_markup_in_the_error_and_the_tenant_name_is_escaped() {
    let slack = slack_server().await;
    let notifier = slack_notifier(&slack);
    let n = AdminNotice {
        tenant_name: Some("Smith & Sons <!here>".into()),
        error: "LLM answer is not valid JSON: answer starts with \"<!channel> see <https://evil.example|invoice>\"".into(),
        ..notice()
    };

    notifier.notify(&n).await;

    let body = slack_bodies(&slack).await.remove(0);
    let texts: Vec<String> = [
        body["text"].clone(),
        body["blocks"][1]["fields"][1]["text"].clone(),
        body["blocks"][2]["text"]["text"].clone(),
    ]
    .iter()
    .map(|v| v.as_str().unwrap().to_owned())
    .collect();
    for text in &texts {
        assert!(!text.contains("<!"), "unescaped mention in {text}");
        assert!(!text.contains("<https"), "unescaped link in {text}");
    }
    assert!(
        texts[1].contains("Smith &amp; Sons &lt;!here&gt;"),
        "{}",
        texts[1]
    );
    assert!(texts[2].contains("&lt;!channel&gt;"), "{}", texts[2]);
}

#[tokio::test]
async fn a_failed_channel_is_logged_with_the_field_the_alarm_counts() {
    let broken = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(404).set_body_string("no_service"))
        .mount(&broken)
        .await;
    let notifier = Notifier::new(None, Duration::from_secs(5)).with_channel(slack_at(&broken));
    // docflow's JSON lines, which CloudWatch receives and the alarm's filter reads.
    let logs = Logs::default();
    let guard = logs.capture_json("info");

    notifier.notify(&notice()).await;

    drop(guard);
    let failures: Vec<Value> = logs
        .lines()
        .into_iter()
        .filter(|line| line["fields"][docflow::notify::FAILED_LOG_FIELD] == json!(true))
        .collect();
    assert_eq!(failures.len(), 1, "{}", logs.text());
    assert_eq!(failures[0]["fields"]["channel"], "slack");
    assert_eq!(failures[0]["level"], "ERROR");
}
