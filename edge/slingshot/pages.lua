-- The small pages the edge answers a visitor with instead of a redirect:
-- no such link (404), a link expired or used up (410), and the bare 503 of
-- an edge that cannot ask Redis. Pure: edge.lua
-- picks the language from Accept-Language (pages.language) and keeps each
-- page it has made on its domain's table (pages.for_domain), so that a
-- flood of unknown slugs costs a table lookup per request, not a page.
local memo = require("slingshot.memo")
local html = require("slingshot.html")

local gmatch = string.gmatch
local lower = string.lower
local match = string.match
local tonumber = tonumber
local tostring = tostring
local escape = html.escape
local head = html.head
local FOOT = html.FOOT

local _M = { _VERSION = "0.1.0" }

-- Per language: each page's title and text, and the words of its links.
local TEXTS = {
    en = {
        not_found = { "Link not found",
            "There is no short link at this address. Check it for a typo, "
            .. "or ask whoever shared it." },
        expired = { "Link expired",
            "This short link has expired and no longer leads anywhere." },
        limit = { "Link used up",
            "This short link has had all the visits it was made for." },
        continue = "Continue", home = "Home page",
    },
    de = {
        not_found = { "Link nicht gefunden",
            "Unter dieser Adresse gibt es keinen Kurzlink. Prüfen Sie sie auf Tippfehler, "
            .. "oder fragen Sie, wer ihn geteilt hat." },
        expired = { "Link abgelaufen",
            "Dieser Kurzlink ist abgelaufen und führt nirgendwo mehr hin." },
        limit = { "Link aufgebraucht",
            "Dieser Kurzlink hatte alle Besuche, für die er gemacht war." },
        continue = "Weiter", home = "Startseite",
    },
    es = {
        not_found = { "Enlace no encontrado",
            "No hay ningún enlace corto en esta dirección. Compruebe que no tenga errores, "
            .. "o pregunte a quien lo compartió." },
        expired = { "Enlace caducado",
            "Este enlace corto ha caducado y ya no lleva a ninguna parte." },
        limit = { "Enlace agotado",
            "Este enlace corto ya recibió todas las visitas para las que se creó." },
        continue = "Continuar", home = "Página de inicio",
    },
    fr = {
        not_found = { "Lien introuvable",
            "Il n’y a pas de lien court à cette adresse. Vérifiez qu’elle ne contient pas "
            .. "de faute de frappe, ou demandez à la personne qui l’a partagé." },
        expired = { "Lien expiré",
            "Ce lien court a expiré et ne mène plus nulle part." },
        limit = { "Lien épuisé",
            "Ce lien court a reçu toutes les visites prévues." },
        continue = "Continuer", home = "Page d’accueil",
    },
}
_M.LANGUAGES = { "de", "en", "es", "fr" }
_M.KINDS = { "not_found", "expired", "limit" }

-- Accept-Language longer than this is read no further: a visitor's browser
-- sends a few dozen bytes.
local READ_MAX = 256

-- The language of TEXTS the visitor prefers most (its q-value highest, the
-- first listed among equals), by the primary tag alone (de-AT is de); "en"
-- when none is offered.
local function language(accept)
    if not accept or accept == "" then
        return "en"
    end
    local best, best_q = "en", 0
    for entry in gmatch(accept:sub(1, READ_MAX), "[^,]+") do
        local tag = match(entry, "^%s*(%a%a)[%-_;%s]") or match(entry, "^%s*(%a%a)%s*$")
        tag = tag and lower(tag)
        if TEXTS[tag] then
            local q = 1
            local given = match(entry, ";%s*q=([%d.]+)")
            if given then
                q = tonumber(given) or 0
            end
            if q > best_q then
                best, best_q = tag, q
            end
        end
    end
    return best
end
_M.language = memo.of(language)

-- A page of `kind` in `lang` for a domain (root_url, not_found_url): a link
-- to the domain's home page when it has one, and, on a 410, on to its
-- not-found redirect when it has one (a 404 with one is a redirect, no
-- page).
function _M.render(kind, lang, domain)
    local texts = TEXTS[lang] or TEXTS.en
    local title, text = texts[kind][1], texts[kind][2]
    local links = ""
    if kind ~= "not_found" and domain.not_found_url then
        links = links .. "<p><a href=\"" .. escape(domain.not_found_url) .. "\">"
            .. texts.continue .. "</a></p>"
    end
    if domain.root_url then
        links = links .. "<p><a href=\"" .. escape(domain.root_url) .. "\">"
            .. texts.home .. "</a></p>"
    end
    return head(lang, title) .. "<h1>" .. title .. "</h1>"
        .. "<p>" .. text .. "</p>" .. links .. FOOT
end

-- The page and its length (for Content-Length, which spares nginx the
-- chunked encoding), made once per domain table, kind and language: a
-- domain's table is made again when the domains change, and its pages with it.
function _M.for_domain(domain, kind, lang)
    local made = domain.pages
    if not made then
        made = {}
        domain.pages = made
    end
    local key = kind .. lang
    local page = made[key]
    if not page then
        page = _M.render(kind, lang, domain)
        made[key] = page
        made[key .. "#"] = tostring(#page)
    end
    return page, made[key .. "#"]
end

-- The 503 of an edge that could ask Redis nothing (edge.lua): bare, in English.
_M.UNAVAILABLE = "<!doctype html><title>Unavailable</title>"
    .. "<h1>Temporarily unavailable</h1><p>Please try again shortly.</p>"

return _M
