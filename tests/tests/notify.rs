//! Admin notifications on the wire: the Slack webhook body (wiremock) and the SES email
//! (moto's sent-email dump), channel opt-in from the secret and settings, and a failing
//! channel that does not stop the others.

mod matching_support;

use std::time::Duration;

use docflow::notify::{AdminNotice, Delivery, Notifier, NotifySettings, SesChannel, SlackChannel};
use docflow::secrets::SecretStore;
use docflow_tests::{aws, unique};
use matching_support::{ADMIN_BASE_URL, moto_data, slack_bodies, slack_notifier, slack_server};
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn notice() -> AdminNotice {
    AdminNotice {
        title: "Document matching failed".into(),
        document_id: Uuid::new_v4(),
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
                    {"type": "mrkdwn", "text": format!("*Document*\n<{link}|{}>", n.document_id)},
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
