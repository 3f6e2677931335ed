-- The health of links' destinations: the table of
-- dashboard/health/models.py, exactly as Django would make it (the names
-- of its constraints included); tests/test_schema.py holds the two
-- together. Applied by dashboard/health/migrations/0001_initial.py.

-- The last check of a link's destination by `manage.py check_links`, one
-- row per link from its first check on, gone with the link. A broken one
-- has a reason (dns, http_4xx, http_5xx, tls, too_many_redirects, timeout,
-- connect, refused_address) and the first check of its run of broken
-- ones (`broken_since`); a working one has neither.
CREATE TABLE health_linkhealth (
    link_id      bigint NOT NULL PRIMARY KEY
        CONSTRAINT health_linkhealth_link_id_b2b54718_fk_links_link_id REFERENCES links_link (id)
        DEFERRABLE INITIALLY DEFERRED,
    url          text NOT NULL,          -- the destination as checked
    checked_at   timestamptz NOT NULL,
    status       varchar(6) NOT NULL,
    reason       varchar(20) NOT NULL,
    http_status  smallint NULL CHECK (http_status >= 0),
    detail       varchar(300) NOT NULL,  -- a sentence for the team, never the server's own words
    final_url    text NOT NULL,          -- where the redirects led
    broken_since timestamptz NULL,
    CONSTRAINT health_status_valid CHECK (status IN ('ok', 'broken')),
    CONSTRAINT health_broken_has_reason_and_since CHECK (
        (broken_since IS NULL AND reason = '' AND status = 'ok')
        OR (broken_since IS NOT NULL AND status = 'broken' AND NOT (reason = ''))
    )
);
