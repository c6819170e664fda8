"""Who may do what through the API: reading is open to anonymous clients when API_ANONYMOUS_READ is on (the
default for a monitor; off in production settings), otherwise to any authenticated client; writing needs an
authenticated client (token or session, CSRF checked for sessions) with the model permission."""

from __future__ import annotations

from django.conf import settings
from rest_framework.permissions import SAFE_METHODS, BasePermission, DjangoModelPermissions


def read_allowed(request) -> bool:
    return bool(getattr(settings, "API_ANONYMOUS_READ", True) or (request.user and request.user.is_authenticated))


class ReadOrModelPermission(DjangoModelPermissions):
    """Reads by read_allowed; writes by Django's model permissions (add, change, delete)."""

    def has_permission(self, request, view):
        if request.method in SAFE_METHODS:
            return read_allowed(request)
        return super().has_permission(request, view)


class ReadAccess(BasePermission):
    """For computations that change nothing (the what-if preview): the read rule, whatever the method."""

    def has_permission(self, request, view):
        return read_allowed(request)


class CanClaimDiracJobs(BasePermission):
    """A matching request that claims a job changes it: an authenticated client with the permission to change
    DIRAC jobs (a pilot's token)."""

    def has_permission(self, request, view):
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm("brokerage.change_diracjob"))


class CanChangeGdpConfig(BasePermission):
    """Restoring a gdpconfig revision writes gdpconfig: an authenticated client with the permission to change it."""

    def has_permission(self, request, view):
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm("brokerage.change_gdpconfig"))
