//! Admin notifications on permanent failures: Slack webhook and SES email, opt-in.
