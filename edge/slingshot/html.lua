-- What the edge writes its pages and URLs with: text made safe in HTML, a
-- byte percent-encoded, and the head of the pages of pages.lua with their
-- one style block, which the pages' CSP allows by its hash alone.
-- Pure: no ngx, so busted tests it directly.
local gsub = string.gsub
local byte = string.byte
local format = string.format

local _M = { _VERSION = "0.1.0" }

-- The pages' one style block; edge/t/test_unlock.py checks that CSP's hash
-- is this text's.
local STYLE = "body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1f2328;background:#f6f8fa}"
    .. "main{max-width:24rem;margin:12vh auto;padding:1.5rem;background:#fff;"
    .. "border:1px solid #d0d7de;border-radius:8px}"
    .. "h1{font-size:1.25rem;margin:0 0 1rem}"
    .. "label{display:block;font-weight:600;margin-bottom:.25rem}"
    .. "input{box-sizing:border-box;width:100%;font:inherit;padding:.5rem;"
    .. "border:1px solid #8c959f;border-radius:6px}"
    .. "button{margin-top:1rem;width:100%;font:inherit;padding:.5rem;border:0;border-radius:6px;"
    .. "background:#0969da;color:#fff;cursor:pointer}"
    .. ".error{color:#cf222e;font-weight:600}"
    .. "@media (max-width:30rem){main{margin:0;border:0;border-radius:0;min-height:100vh;"
    .. "box-sizing:border-box}}"
_M.STYLE = STYLE
_M.CSP = "default-src 'none'; "
    .. "style-src 'sha256-enUyoFlbGwLWshZMQJKWnKyHAGvthDOG8Va06yeHULQ='; "
    .. "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

local ESCAPES = {
    ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;",
}

-- `text` as it reads in an element or a quoted attribute.
function _M.escape(text)
    return (gsub(text, "[&<>\"']", ESCAPES))
end

-- One byte as %XX, for gsub over the bytes a URL must not hold as they are.
function _M.percent(c)
    return format("%%%02X", byte(c))
end

-- A page in `lang` up to its <main>: `title` (HTML), and `meta`, tags of
-- this page's own that go before the others (may be nil).
function _M.head(lang, title, meta)
    return "<!doctype html><html lang=\"" .. lang .. "\"><head><meta charset=\"utf-8\">"
        .. (meta or "")
        .. "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        .. "<meta name=\"robots\" content=\"noindex\"><title>" .. title .. "</title>"
        .. "<style>" .. STYLE .. "</style></head><body><main>"
end

-- The end of every page.
_M.FOOT = "</main></body></html>"

return _M
