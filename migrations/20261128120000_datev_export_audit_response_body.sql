-- Maesn's answer to a booking proposal that could not be read (a 2xx cut off by a reset,
-- or not the documented envelope), kept as it arrived (keys redacted, at most 4,096
-- characters): what a person checking DATEV, or the sweeper following a task id salvaged
-- from it, has to go on.
ALTER TABLE ap_datev_export_audit
    ADD COLUMN response_body TEXT CHECK (char_length(response_body) <= 4096);
