-- YOURLS 1.10's tables, as it creates them when it is installed: the three
-- statements of yourls_create_sql_tables() in includes/functions-install.php
-- of YOURLS 1.10.4 (tag 1.10.4, commit ef695ea14d89d920e771a88f32cbe0485256366a;
-- 1.10.0's differ in whitespace only), the PHP strings joined, a line for each
-- of their lines, with YOURLS' default table prefix (YOURLS_DB_PREFIX): yourls_.
-- importers/tests/test_yourls_dumps.py creates them in a real MariaDB.
CREATE TABLE IF NOT EXISTS `yourls_url` (
`keyword` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
`url` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
`title` text COLLATE utf8mb4_unicode_ci DEFAULT NULL,
`timestamp` timestamp NOT NULL DEFAULT current_timestamp(),
`ip` varchar(41) COLLATE utf8mb4_unicode_ci NOT NULL,
`clicks` int(10) unsigned NOT NULL,
PRIMARY KEY (`keyword`),
KEY `ip` (`ip`),
KEY `timestamp` (`timestamp`),
KEY `url_idx` (`url`(30))
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS `yourls_options` (
`option_id` bigint(20) unsigned NOT NULL auto_increment,
`option_name` varchar(64) COLLATE utf8mb4_unicode_ci NOT NULL default '',
`option_value` longtext COLLATE utf8mb4_unicode_ci NOT NULL,
PRIMARY KEY  (`option_id`,`option_name`),
KEY `option_name` (`option_name`)
) AUTO_INCREMENT=1 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `yourls_log` (
`click_id` int(11) NOT NULL auto_increment,
`click_time` datetime NOT NULL,
`shorturl` varchar(100) BINARY NOT NULL,
`referrer` varchar(200) NOT NULL,
`user_agent` varchar(255) NOT NULL,
`ip_address` varchar(41) NOT NULL,
`country_code` char(2) NOT NULL,
PRIMARY KEY  (`click_id`),
KEY `shorturl` (`shorturl`)
) AUTO_INCREMENT=1 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
