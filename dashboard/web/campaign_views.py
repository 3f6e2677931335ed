"""The campaign report: the clicks of the links of the team chosen in the
navigation by the UTM campaign and source of the target that served them
(clicks/campaigns.py), over the last days."""

from datetime import UTC, datetime, timedelta

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from clicks.campaigns import campaign_clicks, whole_hours
from links.selectors import links_visible_to

from .teams import current_team

DAYS = (7, 30, 90, 365)
DEFAULT_DAYS = 30


@login_required
def campaigns(request):
    team = current_team(request)
    days = int(request.GET["days"]) if request.GET.get("days") in {str(d) for d in DAYS} else DEFAULT_DAYS
    include_bots = request.GET.get("include_bots") == "true"
    start, end = whole_hours(datetime.now(UTC) - timedelta(days=days), datetime.now(UTC))
    links = links_visible_to(request.user, team=team.pk)
    rows = campaign_clicks(links, start=start, end=end, include_bots=include_bots)
    return render(
        request,
        "web/campaigns.html",
        {
            "team": team,
            "rows": rows,
            "total": sum(row.clicks for row in rows),
            "days": days,
            "choices": DAYS,
            "include_bots": include_bots,
            "start": start,
            "end": end,
        },
    )
