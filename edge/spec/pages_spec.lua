package.path = "./?.lua;" .. package.path
local pages = require("slingshot.pages")
local html = require("slingshot.html")

local STYLE = html.STYLE

local function count(text, plain)
    local n, at = 0, 1
    while true do
        local found = text:find(plain, at, true)
        if not found then
            return n
        end
        n, at = n + 1, found + #plain
    end
end

describe("pages.language", function()
    it("takes the visitor's most preferred language the pages have, by its primary tag", function()
        assert.equal("de", pages.language("de-AT,de;q=0.9,en;q=0.8"))
        assert.equal("fr", pages.language("it-IT, fr;q=0.7, en;q=0.5"))
        assert.equal("es", pages.language("en;q=0.4, ES-mx;q=0.9"))
        assert.equal("de", pages.language("DE"))
        assert.equal("en", pages.language("en-US,en;q=0.9,de;q=0.8"))
        assert.equal("fr", pages.language("de;q=0.5, fr;q=0.5, fr-CA"))
    end)

    it("falls back to English for nothing it has, and for nonsense", function()
        for _, header in ipairs({ "", "*", "it, ja;q=0.5", ";;;,,,", "d", "deutsch",
                "de;q=0", string.rep("x,", 500) .. "de" }) do
            assert.equal("en", pages.language(header), header)
        end
        assert.equal("en", pages.language(nil))
    end)
end)

describe("pages.render", function()
    it("says the page's words in its language, with the domain's home page", function()
        local domain = { root_url = "https://example.com/?a=1&b=\"2\"" }
        local page = pages.render("not_found", "de", domain)
        assert.truthy(page:find("<html lang=\"de\">", 1, true))
        assert.truthy(page:find("<title>Link nicht gefunden</title>", 1, true))
        assert.truthy(page:find("<style>" .. STYLE .. "</style>", 1, true))
        local home = "href=\"https://example.com/?a=1&amp;b=&quot;2&quot;\">Startseite</a>"
        assert.truthy(page:find(home, 1, true))
    end)

    it("offers the not-found redirect on a 410 page only: a 404 with one is a redirect", function()
        local domain = { not_found_url = "https://example.com/missing" }
        local expired = pages.render("expired", "en", domain)
        assert.truthy(expired:find("<a href=\"https://example.com/missing\">Continue</a>", 1, true))
        assert.truthy(expired:find("This short link has expired", 1, true))
        assert.falsy(pages.render("not_found", "en", domain):find("Continue", 1, true))
        assert.falsy(pages.render("limit", "fr", {}):find("<a ", 1, true))
    end)

    it("has every page in every language", function()
        for _, lang in ipairs(pages.LANGUAGES) do
            for _, kind in ipairs(pages.KINDS) do
                local page = pages.render(kind, lang, {})
                assert.truthy(page:find("<h1>[^<]+</h1><p>[^<]+</p>"), kind .. " " .. lang)
            end
        end
    end)
end)

describe("pages.warning_page and pages.blocked_page", function()
    it("warns in every language, shows the destination escaped, and a way on to it", function()
        local url = "https://phish.example/login?a=1&b=<x>"
        for _, lang in ipairs(pages.LANGUAGES) do
            local page = pages.warning_page(lang, url, "https://sho.rt/abc", true)
            assert.truthy(page:find("<h1>[^<]+</h1><p>[^<]+</p>"), lang)
            local shown = "https://phish.example/login?a=1&amp;b=&lt;x&gt;"
            assert.truthy(page:find(shown, 1, true), lang)
            assert.falsy(page:find("<x>", 1, true), lang)
            local link = 'href="' .. shown .. '" rel="noreferrer nofollow"'
            assert.truthy(page:find(link, 1, true), lang)
            assert.truthy(page:find('href="/report?url=https://sho.rt/abc"', 1, true), lang)
        end
        local without = pages.warning_page("en", url, "https://sho.rt/abc", false)
        assert.falsy(without:find("/report", 1, true))
        assert.truthy(pages.warning_page("de", url, "x", false):find("Trotzdem zur Seite", 1, true))
    end)

    it("says the operator's words, escaped, or its own", function()
        local page = pages.blocked_page("en", "Stopped: <b>phishing</b>", false)
        assert.truthy(page:find("<p>Stopped: &lt;b&gt;phishing&lt;/b&gt;</p>", 1, true))
        assert.truthy(pages.blocked_page("fr", "", true):find("désactivé par l’opérateur", 1, true))
        assert.truthy(pages.blocked_page("fr", "", true):find('href="/report"', 1, true))
    end)

    it("puts the report page's link on the 404, 410 and 451 pages when asked", function()
        for _, kind in ipairs(pages.KINDS) do
            local page = pages.render(kind, "es", {}, true)
            assert.truthy(page:find('<a href="/report">Denunciar un enlace</a>', 1, true))
            assert.falsy(pages.render(kind, "es", {}):find("/report", 1, true))
        end
    end)
end)

describe("pages.for_domain", function()
    it("makes each page once per domain table, and again for a new table", function()
        local domain = { root_url = "https://a.example/" }
        local first, length = pages.for_domain(domain, "not_found", "en")
        assert.equal(tostring(#first), length)
        assert.equal(first, pages.for_domain(domain, "not_found", "en"))
        assert.equal(first, domain.pages.not_founden)
        assert.are_not.equal(first, pages.for_domain(domain, "not_found", "fr"))
        local other = pages.for_domain({ root_url = "https://b.example/" }, "not_found", "en")
        assert.truthy(other:find("b.example", 1, true))
    end)
end)

-- A few of each language's own words: a language that fell back to
-- another's would not have them.
local WORDS = {
    en = { heading = "This link needs a password", label = "Password", button = "Continue",
        wrong = "That is not the password.", opening = "Opening the link",
        link_locked = "Too many wrong passwords for this link. Try again in 10 minutes." },
    de = { heading = "Für diesen Link ist ein Passwort nötig", label = "Passwort",
        button = "Weiter",
        wrong = "Das ist nicht das Passwort.", opening = "Der Link wird geöffnet",
        link_locked = "Zu viele falsche Passwörter für diesen Link. "
            .. "Versuchen Sie es in 10 Minuten erneut." },
    es = { heading = "Este enlace necesita una contraseña", label = "Contraseña",
        button = "Continuar",
        wrong = "Esa no es la contraseña.", opening = "Abriendo el enlace",
        link_locked = "Demasiadas contraseñas incorrectas para este enlace. "
            .. "Inténtelo de nuevo en 10 minutos." },
    fr = { heading = "Ce lien demande un mot de passe", label = "Mot de passe",
        button = "Continuer",
        wrong = "Ce n’est pas le mot de passe.", opening = "Ouverture du lien",
        link_locked = "Trop de mauvais mots de passe pour ce lien. Réessayez dans 10 minutes." },
}

-- A slug's query and a Referer as a visitor could send them.
local ACTION = "/abc?q=\"><script>x</script>&r='1'"
local ACTION_HTML = "/abc?q=&quot;&gt;&lt;script&gt;x&lt;/script&gt;&amp;r=&#39;1&#39;"
local REFERER = "https://evil.example/\"><img src=x onerror=alert(1)>&'"
local REFERER_HTML = "https://evil.example/&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&amp;&#39;"

describe("pages.password_page", function()
    it("asks for the password in every language, under one head and the one style", function()
        for _, lang in ipairs(pages.LANGUAGES) do
            local words = WORDS[lang]
            local page = pages.password_page(lang, "/abc", "")
            assert.truthy(page:find("^<!doctype html><html lang=\"" .. lang .. "\">"), lang)
            assert.truthy(page:find("<h1>" .. words.heading .. "</h1>", 1, true), lang)
            assert.truthy(page:find("<label for=\"password\">" .. words.label .. "</label>", 1,
                true), lang)
            assert.truthy(page:find("<button type=\"submit\">" .. words.button .. "</button>", 1,
                true), lang)
            assert.truthy(page:find("maxlength=\"" .. pages.PASSWORD_MAX .. "\">", 1, true), lang)
            assert.equal(1, count(page, "<head>"), lang)
            assert.equal(1, count(page, "<style>" .. STYLE .. "</style>"), lang)
            assert.falsy(page:find("role=\"alert\"", 1, true), lang)
            assert.truthy(page:find("</form></main></body></html>$"), lang)
        end
    end)

    it("escapes the form's action and the Referer it keeps in every language", function()
        for _, lang in ipairs(pages.LANGUAGES) do
            for _, message in ipairs({ false, pages.message(lang, { outcome = "wrong" }) }) do
                local page = pages.password_page(lang, ACTION, REFERER, message or nil)
                assert.truthy(page:find("action=\"" .. ACTION_HTML .. "\"", 1, true), lang)
                assert.truthy(page:find("name=\"ref\" value=\"" .. REFERER_HTML .. "\"", 1, true),
                    lang)
                assert.falsy(page:find("<script", 1, true), lang)
                assert.falsy(page:find("<img", 1, true), lang)
            end
        end
    end)

    it("says what the check answered above the field, which it describes", function()
        for _, lang in ipairs(pages.LANGUAGES) do
            local wrong = pages.message(lang, { outcome = "wrong" })
            local page = pages.password_page(lang, "/abc", "", wrong)
            local alert = "<p class=\"error\" id=\"error\" role=\"alert\">" .. WORDS[lang].wrong
                .. "</p>"
            assert.truthy(page:find("</h1>" .. alert .. "<form ", 1, true), lang)
            assert.truthy(page:find(" aria-describedby=\"error\"><button", 1, true), lang)
        end
        local page = pages.password_page("en", "/abc", "", "<b>&</b>")
        assert.truthy(page:find("role=\"alert\">&lt;b&gt;&amp;&lt;/b&gt;</p>", 1, true))
    end)

    it("is English for a language it does not have", function()
        assert.equal(pages.password_page("en", "/abc", ""), pages.password_page("it", "/abc", ""))
    end)
end)

describe("pages.message", function()
    it("says every answer in every language, each its own", function()
        local answers = {
            { outcome = "wrong" }, { outcome = "empty" }, { outcome = "cross-site" },
            { outcome = "unavailable" },
            { outcome = "locked", scope = "address", retry_after = 840 },
            { outcome = "locked", scope = "link", retry_after = 600 },
            { outcome = "locked", scope = "everyone", retry_after = 1 },
        }
        for _, lang in ipairs(pages.LANGUAGES) do
            local said = {}
            for _, answer in ipairs(answers) do
                local text = pages.message(lang, answer)
                assert.is_string(text)
                assert.falsy(said[text], text)
                said[text] = true
                if lang ~= "en" then
                    assert.are_not.equal(pages.message("en", answer), text, lang)
                end
            end
            assert.equal(WORDS[lang].wrong, pages.message(lang, answers[1]))
            assert.equal(WORDS[lang].link_locked, pages.message(lang, answers[6]))
            -- Anything else the check could not answer says it cannot check.
            assert.equal(pages.message(lang, answers[4]),
                pages.message(lang, { outcome = "right?" }))
        end
    end)

    it("is exactly what it said in English before it spoke other languages", function()
        assert.equal("Too many wrong passwords from your address. Try again in 14 minutes.",
            pages.message("en", { outcome = "locked", scope = "address", retry_after = 840 }))
        assert.equal("Too many passwords are being checked right now. Try again in 1 second.",
            pages.message("en", { outcome = "locked", scope = "everyone", retry_after = 1 }))
        assert.equal("Passwords cannot be checked just now. Try again in a minute.",
            pages.message("en", { outcome = "unavailable" }))
    end)
end)

describe("pages.wait_words", function()
    it("says seconds under a minute, else minutes rounded up, singular and plural", function()
        local expected = {
            en = { "in 1 second", "in 40 seconds", "in 1 minute", "in 2 minutes", "in 15 minutes" },
            de = { "in 1 Sekunde", "in 40 Sekunden", "in 1 Minute", "in 2 Minuten",
                "in 15 Minuten" },
            es = { "en 1 segundo", "en 40 segundos", "en 1 minuto", "en 2 minutos",
                "en 15 minutos" },
            fr = { "dans 1 seconde", "dans 40 secondes", "dans 1 minute", "dans 2 minutes",
                "dans 15 minutes" },
        }
        for lang, words in pairs(expected) do
            for i, seconds in ipairs({ 1, 40, 60, 61, 900 }) do
                assert.equal(words[i], pages.wait_words(lang, seconds))
            end
        end
    end)
end)

describe("pages.onward_page", function()
    it("goes on to the escaped URL, with no script, in every language", function()
        for _, lang in ipairs(pages.LANGUAGES) do
            local page = pages.onward_page(lang, ACTION)
            assert.truthy(page:find("^<!doctype html><html lang=\"" .. lang .. "\">"), lang)
            assert.truthy(page:find("<meta http-equiv=\"refresh\" content=\"0; url=" .. ACTION_HTML
                .. "\">", 1, true), lang)
            assert.truthy(page:find("<h1>" .. WORDS[lang].opening .. "</h1><p><a href=\""
                .. ACTION_HTML .. "\">" .. WORDS[lang].button .. "</a></p>", 1, true), lang)
            assert.equal(1, count(page, "<head>"), lang)
            assert.falsy(page:find("<script", 1, true), lang)
        end
    end)
end)
