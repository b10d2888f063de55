from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.models import Membership


@login_required
def home(request: HttpRequest) -> HttpResponse:
    membership = Membership.objects.select_related("tenant").filter(user=request.user).first()
    return render(request, "home.html", {"membership": membership})
