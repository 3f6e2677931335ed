-- A person's settings for the dashboard's pages: the table of
-- dashboard/web/models.py, exactly as Django would make it
-- (tests/test_schema.py). Applied by dashboard/web/migrations/0001_initial.py.

-- time_zone: an IANA name, in which the pages show times and make days;
-- empty until chosen, or taken from the browser on a first visit.
CREATE TABLE web_preferences (
    user_id   integer NOT NULL PRIMARY KEY
        CONSTRAINT web_preferences_user_id_b3677b6a_fk_auth_user_id REFERENCES auth_user (id)
        DEFERRABLE INITIALLY DEFERRED,
    time_zone varchar(64) NOT NULL
);
