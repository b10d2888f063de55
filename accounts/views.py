from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.models import Membership


@login_required
def home(request: HttpRequest) -> HttpResponse:
    user = request.user
    if not isinstance(user, AbstractBaseUser):
        raise PermissionDenied  # login_required let an anonymous user through: never
    membership = Membership.objects.select_related("tenant").filter(user=user).first()
    return render(request, "home.html", {"membership": membership})
