package.path = "./?.lua;" .. package.path
local pages = require("slingshot.pages")
local html = require("slingshot.html")

local STYLE = html.STYLE

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
