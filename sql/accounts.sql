-- When each signed-in session was last used: the table of
-- dashboard/accounts/models.py, exactly as Django would make it
-- (tests/test_schema.py). Sessions themselves are Django's `django_session`.
-- Applied by dashboard/accounts/migrations/0001_initial.py.

-- Written at most once a minute per session (accounts/middleware.py); a
-- person's rows end their sessions when they are deactivated.
CREATE TABLE accounts_sessionuse (
    session_key  varchar(40) NOT NULL PRIMARY KEY,
    user_agent   varchar(200) NOT NULL,
    last_used_at timestamptz NOT NULL,
    user_id      integer NOT NULL
        CONSTRAINT accounts_sessionuse_user_id_314bdce4_fk_auth_user_id REFERENCES auth_user (id)
        DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX accounts_sessionuse_session_key_8c9289dd_like ON accounts_sessionuse (session_key varchar_pattern_ops);
CREATE INDEX accounts_sessionuse_user_id_314bdce4 ON accounts_sessionuse (user_id);

-- A password `make run` generated for the first admin and showed once; the
-- pages ask for a new one while the person's password is still this hash
-- (accounts.models.GeneratedPassword). Added by migration 0002 to a database
-- made before.
CREATE TABLE accounts_generatedpassword (
    user_id  integer NOT NULL PRIMARY KEY
        CONSTRAINT accounts_generatedpassword_user_id_f02317c2_fk_auth_user_id REFERENCES auth_user (id)
        DEFERRABLE INITIALLY DEFERRED,
    password varchar(128) NOT NULL
);
