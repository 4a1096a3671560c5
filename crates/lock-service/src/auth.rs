//! # Users, roles and permissions: etcd's auth model, replicated
//!
//! etcd's v3 auth (its documentation's "Role-based access control") in the replicated state,
//! so that every node answers "may this user do that?" the same way:
//!
//! - a **user** has a password (stored only as a PHC hash string the proposer computed: the
//!   state machine never sees a password) or none (it can then only be a client certificate's
//!   common name), and a set of roles;
//! - a **role** has permissions, each `read`, `write` or `readwrite` on a key range
//!   `[key, range_end)` written as etcd writes it: an empty `range_end` is the key alone,
//!   `"\0"` is every key from `key` on, and the prefix's successor is the prefix;
//! - the role **`root`** is implicit (granting it needs no `role add`, as in etcd) and permits
//!   everything, including the auth and membership changes no other role can be given;
//! - auth is **enabled** only when a user `root` exists and holds the role `root` (etcd's
//!   "root user does not exist" / "root user does not have root role", which `etcdctl auth
//!   enable` answers by making the role and granting it); while it is enabled, `root` cannot be
//!   deleted nor lose the role.
//!
//! A request's range is permitted when the union of the ranges of the caller's permissions of
//! the right kind covers it, as etcd's merged interval check does: two adjacent grants cover a
//! range that spans both. Every change moves the store's revision (etcd's `authRevision`).
//!
//! What the caller is (a user, root by the node's API token, or nobody) and when the check
//! applies (only while auth is enabled) are the server's business (`ringleader-service`'s
//! operations layer); this module answers the question on the replicated facts.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The name of the user and of the role that may do everything.
pub const ROOT: &str = "root";

/// What a permission allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Access {
    /// Reading the range (range, watch, an election's leader).
    Read,
    /// Writing the range (put, delete, locks and campaigns on names in it).
    Write,
    /// Both.
    ReadWrite,
}

impl Access {
    /// Whether a permission of this kind allows `want` (`Read` or `Write`).
    pub fn allows(self, want: Access) -> bool {
        self == Access::ReadWrite || self == want
    }
}

/// One permission of a role: `access` on the keys `[key, range_end)` (etcd's encoding: an
/// empty `range_end` is `key` alone, `"\0"` every key from `key` on).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Permission {
    /// What it allows.
    pub access: Access,
    /// The range's first key.
    pub key: Vec<u8>,
    /// The range's end (exclusive), in etcd's encoding.
    pub range_end: Vec<u8>,
}

/// A user of the auth store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct User {
    /// The password's PHC hash string (`None`: the user has no password and can only be a
    /// client certificate's common name).
    pub password: Option<String>,
    /// The roles granted to it.
    pub roles: BTreeSet<String>,
}

/// A role of the auth store: its permissions, in the order they were granted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Role {
    /// Its permissions.
    pub permissions: Vec<Permission>,
}

/// A change to the auth store, as a replicated command. Passwords arrive hashed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuthOp {
    /// Turn authentication on (needs user `root` with role `root`).
    Enable,
    /// Turn it off.
    Disable,
    /// Add user `name` with the password hash `password` (`None`: no password).
    UserAdd {
        /// The user's name (not empty).
        name: String,
        /// The password's PHC hash string, or none.
        password: Option<String>,
    },
    /// Delete user `name`.
    UserDelete {
        /// The user.
        name: String,
    },
    /// Set user `name`'s password hash.
    UserChangePassword {
        /// The user.
        name: String,
        /// The new password's PHC hash string, or none.
        password: Option<String>,
    },
    /// Grant `role` to `user`.
    UserGrantRole {
        /// The user.
        user: String,
        /// The role (`root` needs no `RoleAdd`).
        role: String,
    },
    /// Take `role` from `user`.
    UserRevokeRole {
        /// The user.
        user: String,
        /// The role.
        role: String,
    },
    /// Add role `name`.
    RoleAdd {
        /// The role's name (not empty).
        name: String,
    },
    /// Delete role `name` (and take it from every user).
    RoleDelete {
        /// The role.
        name: String,
    },
    /// Give `role` the permission `permission` (a permission on the same range replaces the
    /// old one, as in etcd).
    RoleGrantPermission {
        /// The role.
        role: String,
        /// The permission.
        permission: Permission,
    },
    /// Take from `role` the permission on exactly `[key, range_end)`.
    RoleRevokePermission {
        /// The role.
        role: String,
        /// The range's first key.
        key: Vec<u8>,
        /// The range's end.
        range_end: Vec<u8>,
    },
}

/// Why an auth change was refused; nothing changed. The messages are etcd's, which etcd's
/// clients recognise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub enum AuthRefusal {
    /// A user name was empty.
    #[error("etcdserver: user name is empty")]
    UserEmpty,
    /// A role name was empty.
    #[error("etcdserver: role name is empty")]
    RoleEmpty,
    /// The user exists already.
    #[error("etcdserver: user name already exists")]
    UserExists,
    /// No such user.
    #[error("etcdserver: user name not found")]
    UserNotFound,
    /// The role exists already.
    #[error("etcdserver: role name already exists")]
    RoleExists,
    /// No such role.
    #[error("etcdserver: role name not found")]
    RoleNotFound,
    /// The user does not have the role it was asked to lose.
    #[error("etcdserver: role is not granted to the user")]
    RoleNotGranted,
    /// The role has no permission on exactly that range.
    #[error("etcdserver: permission is not granted to the role")]
    PermissionNotGranted,
    /// Enabling auth needs a user `root`.
    #[error("etcdserver: root user does not exist")]
    RootUserMissing,
    /// Enabling auth needs user `root` to hold role `root`.
    #[error("etcdserver: root user does not have root role")]
    RootRoleMissing,
    /// While auth is enabled, `root` cannot be deleted nor lose role `root`, and role `root`
    /// cannot be deleted.
    #[error("etcdserver: invalid auth management")]
    InvalidManagement,
}

/// The replicated auth store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AuthStore {
    enabled: bool,
    revision: u64,
    users: BTreeMap<String, User>,
    roles: BTreeMap<String, Role>,
}

impl AuthStore {
    /// Whether authentication is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// How many changes were applied (etcd's `authRevision`).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// User `name`, if it exists.
    pub fn user(&self, name: &str) -> Option<&User> {
        self.users.get(name)
    }

    /// Role `name`, if it exists (the implicit `root` only once added).
    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.get(name)
    }

    /// Every user's name, in order.
    pub fn user_names(&self) -> impl Iterator<Item = &str> {
        self.users.keys().map(String::as_str)
    }

    /// Every role's name, in order.
    pub fn role_names(&self) -> impl Iterator<Item = &str> {
        self.roles.keys().map(String::as_str)
    }

    /// Whether user `name` holds role `root`.
    pub fn is_root(&self, name: &str) -> bool {
        self.users.get(name).is_some_and(|u| u.roles.contains(ROOT))
    }

    /// Whether user `name` may `want` (`Read` or `Write`) every key of `[key, range_end)`
    /// (etcd's encoding). Role `root` may do anything; an unknown user nothing.
    pub fn permits(&self, name: &str, want: Access, key: &[u8], range_end: &[u8]) -> bool {
        let Some(user) = self.users.get(name) else { return false };
        if user.roles.contains(ROOT) {
            return true;
        }
        let granted = user
            .roles
            .iter()
            .filter_map(|r| self.roles.get(r))
            .flat_map(|r| &r.permissions)
            .filter(|p| p.access.allows(want))
            .map(|p| Interval::of(&p.key, &p.range_end));
        Interval::of(key, range_end).covered_by(granted)
    }

    /// Applies `op`: `Ok` when it changed the store (and its revision), the refusal otherwise.
    pub fn apply(&mut self, op: &AuthOp) -> Result<(), AuthRefusal> {
        self.check(op)?;
        match op {
            AuthOp::Enable => self.enabled = true,
            AuthOp::Disable => self.enabled = false,
            AuthOp::UserAdd { name, password } => {
                self.users.insert(name.clone(), User { password: password.clone(), roles: BTreeSet::new() });
            }
            AuthOp::UserDelete { name } => {
                self.users.remove(name);
            }
            AuthOp::UserChangePassword { name, password } => {
                if let Some(u) = self.users.get_mut(name) {
                    u.password = password.clone();
                }
            }
            AuthOp::UserGrantRole { user, role } => {
                if let Some(u) = self.users.get_mut(user) {
                    u.roles.insert(role.clone());
                }
            }
            AuthOp::UserRevokeRole { user, role } => {
                if let Some(u) = self.users.get_mut(user) {
                    u.roles.remove(role);
                }
            }
            AuthOp::RoleAdd { name } => {
                self.roles.insert(name.clone(), Role::default());
            }
            AuthOp::RoleDelete { name } => {
                self.roles.remove(name);
                for u in self.users.values_mut() {
                    u.roles.remove(name);
                }
            }
            AuthOp::RoleGrantPermission { role, permission } => {
                if let Some(r) = self.roles.get_mut(role) {
                    let same =
                        |p: &&mut Permission| p.key == permission.key && p.range_end == permission.range_end;
                    match r.permissions.iter_mut().find(same) {
                        Some(p) => p.access = permission.access,
                        None => r.permissions.push(permission.clone()),
                    }
                }
            }
            AuthOp::RoleRevokePermission { role, key, range_end } => {
                if let Some(r) = self.roles.get_mut(role) {
                    r.permissions.retain(|p| !(p.key == *key && p.range_end == *range_end));
                }
            }
        }
        self.revision += 1;
        Ok(())
    }

    /// Why `op` would be refused, if it would.
    fn check(&self, op: &AuthOp) -> Result<(), AuthRefusal> {
        use AuthRefusal::*;
        let user = |name: &str| {
            if name.is_empty() {
                return Err(UserEmpty);
            }
            self.users.get(name).ok_or(UserNotFound)
        };
        let role = |name: &str| {
            if name.is_empty() {
                return Err(RoleEmpty);
            }
            self.roles.get(name).ok_or(RoleNotFound)
        };
        match op {
            AuthOp::Enable => {
                let root = self.users.get(ROOT).ok_or(RootUserMissing)?;
                if !root.roles.contains(ROOT) {
                    return Err(RootRoleMissing);
                }
            }
            AuthOp::Disable => {}
            AuthOp::UserAdd { name, .. } => {
                if name.is_empty() {
                    return Err(UserEmpty);
                }
                if self.users.contains_key(name) {
                    return Err(UserExists);
                }
            }
            AuthOp::UserDelete { name } => {
                user(name)?;
                if self.enabled && name == ROOT {
                    return Err(InvalidManagement);
                }
            }
            AuthOp::UserChangePassword { name, .. } => {
                user(name)?;
            }
            AuthOp::UserGrantRole { user: name, role: r } => {
                user(name)?;
                if r != ROOT {
                    role(r)?;
                }
            }
            AuthOp::UserRevokeRole { user: name, role: r } => {
                if !user(name)?.roles.contains(r) {
                    return Err(RoleNotGranted);
                }
                if self.enabled && name == ROOT && r == ROOT {
                    return Err(InvalidManagement);
                }
            }
            AuthOp::RoleAdd { name } => {
                if name.is_empty() {
                    return Err(RoleEmpty);
                }
                if self.roles.contains_key(name) {
                    return Err(RoleExists);
                }
            }
            AuthOp::RoleDelete { name } => {
                role(name)?;
                if self.enabled && name == ROOT {
                    return Err(InvalidManagement);
                }
            }
            AuthOp::RoleGrantPermission { role: r, .. } => {
                role(r)?;
            }
            AuthOp::RoleRevokePermission { role: r, key, range_end } => {
                if !role(r)?.permissions.iter().any(|p| p.key == *key && p.range_end == *range_end) {
                    return Err(PermissionNotGranted);
                }
            }
        }
        Ok(())
    }
}

/// A key range `[start, end)`, `end` `None` for "to the last key".
#[derive(Clone, Debug, PartialEq, Eq)]
struct Interval {
    start: Vec<u8>,
    end: Option<Vec<u8>>,
}

impl Interval {
    /// The range etcd encodes as `key`, `range_end`.
    fn of(key: &[u8], range_end: &[u8]) -> Interval {
        let end = match range_end {
            // The key alone: [key, key + "\0").
            [] => Some([key, &[0]].concat()),
            [0] => None,
            end => Some(end.to_vec()),
        };
        Interval { start: key.to_vec(), end }
    }

    /// Whether it holds no key.
    fn is_empty(&self) -> bool {
        self.end.as_ref().is_some_and(|e| *e <= self.start)
    }

    /// Whether the union of `parts` covers every key of this range.
    fn covered_by(&self, parts: impl Iterator<Item = Interval>) -> bool {
        if self.is_empty() {
            return true;
        }
        let mut parts: Vec<Interval> = parts.filter(|p| !p.is_empty()).collect();
        parts.sort_by(|a, b| a.start.cmp(&b.start));
        // Sweep: `reached` is how far from our start the parts cover without a gap.
        let mut reached = self.start.clone();
        for p in parts {
            if p.start > reached {
                break;
            }
            match p.end {
                None => return true,
                Some(e) if e > reached => reached = e,
                Some(_) => {}
            }
            if self.end.as_ref().is_some_and(|end| reached >= *end) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AuthRefusal::*;

    fn add_user(s: &mut AuthStore, name: &str) {
        s.apply(&AuthOp::UserAdd { name: name.into(), password: Some("$hash".into()) }).unwrap();
    }

    fn grant(s: &mut AuthStore, role: &str, access: Access, key: &str, range_end: &str) {
        let permission = Permission { access, key: key.into(), range_end: range_end.into() };
        s.apply(&AuthOp::RoleGrantPermission { role: role.into(), permission }).unwrap();
    }

    /// A store with user `alice` in role `app`, without permissions yet.
    fn alice() -> AuthStore {
        let mut s = AuthStore::default();
        add_user(&mut s, "alice");
        s.apply(&AuthOp::RoleAdd { name: "app".into() }).unwrap();
        s.apply(&AuthOp::UserGrantRole { user: "alice".into(), role: "app".into() }).unwrap();
        s
    }

    #[test]
    fn enabling_needs_user_root_with_role_root() {
        let mut s = AuthStore::default();
        assert_eq!(s.apply(&AuthOp::Enable), Err(RootUserMissing));
        add_user(&mut s, ROOT);
        assert_eq!(s.apply(&AuthOp::Enable), Err(RootRoleMissing));
        // etcdctl's answer to RootRoleMissing: add the role, grant it, enable again.
        s.apply(&AuthOp::RoleAdd { name: ROOT.into() }).unwrap();
        s.apply(&AuthOp::UserGrantRole { user: ROOT.into(), role: ROOT.into() }).unwrap();
        assert_eq!(s.apply(&AuthOp::Enable), Ok(()));
        assert!(s.enabled());
    }

    #[test]
    fn role_root_needs_no_role_add_and_permits_everything() {
        let mut s = AuthStore::default();
        add_user(&mut s, ROOT);
        s.apply(&AuthOp::UserGrantRole { user: ROOT.into(), role: ROOT.into() }).unwrap();
        assert!(s.is_root(ROOT));
        assert!(s.permits(ROOT, Access::Write, b"", b"\0"));
        s.apply(&AuthOp::Enable).unwrap();
    }

    #[test]
    fn while_enabled_root_stays() {
        let mut s = AuthStore::default();
        add_user(&mut s, ROOT);
        s.apply(&AuthOp::RoleAdd { name: ROOT.into() }).unwrap();
        s.apply(&AuthOp::UserGrantRole { user: ROOT.into(), role: ROOT.into() }).unwrap();
        s.apply(&AuthOp::Enable).unwrap();
        assert_eq!(s.apply(&AuthOp::UserDelete { name: ROOT.into() }), Err(InvalidManagement));
        let revoke = AuthOp::UserRevokeRole { user: ROOT.into(), role: ROOT.into() };
        assert_eq!(s.apply(&revoke), Err(InvalidManagement));
        assert_eq!(s.apply(&AuthOp::RoleDelete { name: ROOT.into() }), Err(InvalidManagement));
        s.apply(&AuthOp::Disable).unwrap();
        assert_eq!(s.apply(&revoke), Ok(()));
    }

    #[test]
    fn names_are_unique_and_not_empty() {
        let mut s = alice();
        let add = AuthOp::UserAdd { name: "alice".into(), password: None };
        assert_eq!(s.apply(&add), Err(UserExists));
        assert_eq!(s.apply(&AuthOp::UserAdd { name: String::new(), password: None }), Err(UserEmpty));
        assert_eq!(s.apply(&AuthOp::RoleAdd { name: "app".into() }), Err(RoleExists));
        assert_eq!(s.apply(&AuthOp::RoleAdd { name: String::new() }), Err(RoleEmpty));
        let to_nobody = AuthOp::UserGrantRole { user: "bob".into(), role: "app".into() };
        assert_eq!(s.apply(&to_nobody), Err(UserNotFound));
        let no_role = AuthOp::UserGrantRole { user: "alice".into(), role: "ops".into() };
        assert_eq!(s.apply(&no_role), Err(RoleNotFound));
        let not_held = AuthOp::UserRevokeRole { user: "alice".into(), role: "ops".into() };
        assert_eq!(s.apply(&not_held), Err(RoleNotGranted));
        let not_given =
            AuthOp::RoleRevokePermission { role: "app".into(), key: b"a".to_vec(), range_end: vec![] };
        assert_eq!(s.apply(&not_given), Err(PermissionNotGranted));
    }

    #[test]
    fn every_change_moves_the_revision_and_a_refusal_changes_nothing() {
        let mut s = alice();
        assert_eq!(s.revision(), 3);
        let before = s.clone();
        assert!(s.apply(&AuthOp::RoleAdd { name: "app".into() }).is_err());
        assert_eq!(s, before);
        grant(&mut s, "app", Access::Read, "a", "");
        assert_eq!(s.revision(), 4);
    }

    #[test]
    fn a_key_needs_a_permission_of_the_right_kind() {
        let mut s = alice();
        assert!(!s.permits("alice", Access::Read, b"k", b""), "no permission yet");
        grant(&mut s, "app", Access::Read, "k", "");
        assert!(s.permits("alice", Access::Read, b"k", b""));
        assert!(!s.permits("alice", Access::Write, b"k", b""), "read does not allow write");
        assert!(!s.permits("alice", Access::Read, b"k2", b""), "a key permission is that key alone");
        // Granting the same range again replaces its kind.
        grant(&mut s, "app", Access::ReadWrite, "k", "");
        assert!(s.permits("alice", Access::Write, b"k", b""));
        assert_eq!(s.role("app").unwrap().permissions.len(), 1);
        assert!(!s.permits("bob", Access::Read, b"k", b""), "an unknown user may do nothing");
    }

    #[test]
    fn a_prefix_covers_its_keys_and_ranges_inside_it() {
        let mut s = alice();
        grant(&mut s, "app", Access::Write, "locks/", "locks0"); // --prefix locks/
        assert!(s.permits("alice", Access::Write, b"locks/db", b""));
        assert!(s.permits("alice", Access::Write, b"locks/db/", b"locks/db0"));
        assert!(!s.permits("alice", Access::Write, b"locks", b""));
        assert!(!s.permits("alice", Access::Write, b"locks/", b"\0"), "from-key reaches past the prefix");
        assert!(!s.permits("alice", Access::Write, b"lock", b"locks0"), "starts before the prefix");
    }

    #[test]
    fn adjacent_grants_cover_a_range_across_them_and_a_gap_does_not() {
        let mut s = alice();
        grant(&mut s, "app", Access::Read, "a", "c");
        grant(&mut s, "app", Access::Read, "c", "e");
        assert!(s.permits("alice", Access::Read, b"b", b"d"));
        grant(&mut s, "app", Access::Read, "f", "\0");
        assert!(!s.permits("alice", Access::Read, b"d", b"g"), "[e, f) is not granted");
        assert!(s.permits("alice", Access::Read, b"f", b"\0"));
        assert!(s.permits("alice", Access::Read, b"zzz", b""));
    }

    #[test]
    fn deleting_a_role_takes_it_from_its_users() {
        let mut s = alice();
        grant(&mut s, "app", Access::Read, "k", "");
        s.apply(&AuthOp::RoleDelete { name: "app".into() }).unwrap();
        assert!(s.user("alice").unwrap().roles.is_empty());
        assert!(!s.permits("alice", Access::Read, b"k", b""));
        // A role of the same name added later does not come back to her.
        s.apply(&AuthOp::RoleAdd { name: "app".into() }).unwrap();
        grant(&mut s, "app", Access::Read, "k", "");
        assert!(!s.permits("alice", Access::Read, b"k", b""));
    }

    #[test]
    fn revoking_a_permission_takes_exactly_that_range() {
        let mut s = alice();
        grant(&mut s, "app", Access::Read, "a", "c");
        grant(&mut s, "app", Access::Read, "x", "");
        let revoke =
            AuthOp::RoleRevokePermission { role: "app".into(), key: b"a".to_vec(), range_end: b"c".to_vec() };
        s.apply(&revoke).unwrap();
        assert!(!s.permits("alice", Access::Read, b"b", b""));
        assert!(s.permits("alice", Access::Read, b"x", b""));
    }
}
